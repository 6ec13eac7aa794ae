"""The audit's refusals and its LoRA reference offset: an fp16 model (the audit has classes for fp32 and bf16) or an
unknown executor is a spec error naming the field; with a KL on a LoRA model the move off the reference reaches the
all-zero B matrices, or the adapter's product, and with it the KL, would stay 0."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec
from trainer.audit import REFERENCE_OFFSET, audit
from trainer.spec import SpecError


def spec_file(tmp_path: Path, spec: dict[str, Any]) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return path


def test_the_audit_refuses_an_fp16_model_and_names_the_precisions_it_has_a_class_for(
    tmp_path: Path, sfumato_home: Path
) -> None:
    path = spec_file(tmp_path, audit_spec(model={"precision": "fp16"}))
    with pytest.raises(SpecError) as refused:
        audit(path, ["native"])
    assert refused.value.field == "model.precision"
    assert refused.value.message == "the audit has a class for fp32 and bf16 gradients: set 'fp32' or 'bf16'"


def test_the_audit_refuses_a_forward_family_spec_naming_the_algorithm(tmp_path: Path, sfumato_home: Path) -> None:
    spec = audit_spec(algorithm={"name": "dgpo"})
    for grpo_option in ("noise_level", "clip_range"):  # the tiny spec's GRPO step options; dgpo refuses them
        del spec["algorithm"][grpo_option]
    with pytest.raises(SpecError) as refused:
        audit(spec_file(tmp_path, spec), ["native"])
    assert refused.value.field == "algorithm.name" and "nothing to audit" in refused.value.message


def test_the_audit_refuses_an_executor_it_does_not_know_and_lists_those_it_does(
    tmp_path: Path, sfumato_home: Path
) -> None:
    with pytest.raises(SpecError) as refused:
        audit(spec_file(tmp_path, audit_spec()), ["lean_retain", "turbo"])
    assert refused.value.field == "executor.name"
    assert "turbo" in refused.value.message and "lean_reweight" in refused.value.message


def test_with_a_kl_on_lora_the_audit_moves_the_zero_b_matrices_off_the_reference(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """Every tensor gets 0.05 times its RMS; B (all zeros) takes the RMS of all trainable weights, so the relative
    move lies between 0.05 (B contributing nothing) and 0.05·√2 (B as large as the rest together)."""
    spec = audit_spec(
        model={"finetune": "lora", "lora_rank": 4},
        algorithm={"kl_beta": 0.04, "global_std": False},
        executor={"name": "lean_reweight", "kl": "extra_vjp"},
    )
    report = audit(spec_file(tmp_path, spec), ["lean_retain", "lean_reweight"])
    assert REFERENCE_OFFSET < report["reference_offset"] < REFERENCE_OFFSET * math.sqrt(2)
    assert report["native_metrics"]["kl"] > 0  # with B still 0 the adapter's product, and the KL, would be 0
    assert [e["verdict"] for e in report["executors"].values()] == ["pass", "pass"]


def test_on_lora_the_kl_term_s_e1_bound_is_three_times_native_s_own_fp32_floor(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """The adapter's product is small, so the KL's gradient scales the difference of two nearly equal means:
    native against itself one row a micro-batch differs there by about 1e-4 in fp32, and lean_reweight, which
    forwards one sample at a time, by as much. The KL term is held to three times that, the others to 1e-5."""
    spec = audit_spec(
        model={"finetune": "lora", "lora_rank": 4},
        algorithm={"kl_beta": 0.04, "global_std": False},
        executor={"name": "lean_reweight", "kl": "extra_vjp"},
    )
    report = audit(spec_file(tmp_path, spec), ["lean_reweight"])
    floor = report["native_floor"]
    assert floor["floor"]["kl"][0] > 1e-5 and floor["bound"]["kl"][0] == 3 * floor["floor"]["kl"][0]
    assert floor["bound"]["total"] == [1e-5] and floor["bound"]["policy"] == [1e-5]
    kl = report["executors"]["lean_reweight"]["updates"][0]["terms"]["kl"]
    assert (kl["bound"], kl["verdict"]) == (floor["bound"]["kl"][0], "pass") and kl["rel_l2"] > 1e-5
