"""POST /api/v1/jobs with the memory fields of issue 27: ``model.text_encoders: free`` over a prompt set whose
embeddings are not all cached is refused naming both fields; ``model.precision: fp16`` where the family or the
executor cannot run it, and a ``model.resolution`` off its step, are refused with what is allowed;
``resources.memory_budget`` takes the advisor's sizes and refuses anything else naming the field;
``model.reference: cpu`` is refused where no copy of the reference exists to move (LoRA, FSDP)."""

from __future__ import annotations

from pathlib import Path

import pytest
from server_harness import Harness

from trainer.spec.prompt_cache import MAX_CACHED_PROMPTS


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: spec validation happens before any SQL that differs between databases."""
    return migrated_sqlite_url


def prompt_file(harness: Harness, count: int) -> str:
    """A prompt file of ``count`` prompts where the platform reads local paths."""
    folder = Path(harness.settings.resolved_path_roots()[0])
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"prompts-{count}.txt"
    path.write_text("\n".join(f"prompt {n}" for n in range(count)))
    return str(path)


def refusals(harness: Harness, spec: dict[str, object]) -> dict[str, str]:
    response = harness.submit(spec)
    assert response.status_code == 422, response.text
    return {problem["field"]: problem["message"] for problem in response.json()["detail"]}


def test_free_text_encoders_over_a_prompt_file_too_large_to_cache_is_422_naming_both_fields(harness: Harness) -> None:
    source = prompt_file(harness, MAX_CACHED_PROMPTS + 1)
    problems = refusals(harness, {"model": {"text_encoders": "free"}, "prompts": {"source": source}})
    assert "prompts.source" in problems["model.text_encoders"] and "'cpu'" in problems["model.text_encoders"]


def test_free_text_encoders_over_a_prompt_file_that_fits_the_cache_is_queued(harness: Harness) -> None:
    source = prompt_file(harness, MAX_CACHED_PROMPTS)
    harness.submit_ok({"model": {"text_encoders": "free"}, "prompts": {"source": source}})


def test_fp16_for_a_family_that_cannot_run_it_is_422_naming_the_families_that_can(harness: Harness) -> None:
    problems = refusals(harness, {"model": {"family": "flux", "precision": "fp16"}})
    assert "sd3" in problems["model.precision"]


def test_fp16_with_an_executor_other_than_native_is_422_saying_to_use_bf16(harness: Harness) -> None:
    problems = refusals(harness, {"model": {"precision": "fp16"}, "executor": {"name": "lean_retain"}})
    assert "bf16" in problems["model.precision"]


def test_a_resolution_over_the_family_s_maximum_is_422_naming_the_maximum(harness: Harness) -> None:
    problems = refusals(harness, {"model": {"family": "flux", "resolution": [2064, 512]}})
    assert "2048" in problems["model.resolution"]


def test_a_memory_budget_in_the_advisor_s_units_is_stored_in_bytes(harness: Harness) -> None:
    response = harness.submit({"resources": {"memory_budget": "800MiB"}})
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["resources"]["memory_budget"] == 800 * 2**20


@pytest.mark.parametrize("budget", ["-5", -5, "lots", "0", "12 parsecs"])
def test_a_negative_zero_or_garbled_memory_budget_is_422_naming_it_and_the_sizes_allowed(
    harness: Harness, budget: object
) -> None:
    problems = refusals(harness, {"resources": {"memory_budget": budget}})
    assert "512MiB" in problems["resources.memory_budget"]


FULL = {"finetune": "full", "lora_rank": None}


def test_a_host_reference_under_lora_is_422_saying_the_reference_is_the_base_with_the_adapter_disabled(
    harness: Harness,
) -> None:
    problems = refusals(harness, {"model": {"finetune": "lora", "reference": "cpu"}})
    assert "adapter disabled" in problems["model.reference"] and "'device'" in problems["model.reference"]


def test_a_host_reference_under_fsdp_is_422_saying_the_reference_is_sharded(harness: Harness) -> None:
    spec = {"model": {**FULL, "sharding": "fsdp", "reference": "cpu"}, "resources": {"devices": 2}}
    problems = refusals(harness, spec)
    assert "sharded" in problems["model.reference"] and "'ddp'" in problems["model.reference"]


def test_a_host_reference_under_full_fine_tuning_on_ddp_is_queued(harness: Harness) -> None:
    harness.submit_ok({"model": {**FULL, "sharding": "ddp", "reference": "cpu"}, "resources": {"devices": 2}})
