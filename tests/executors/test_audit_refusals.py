"""The audit's refusals and its LoRA reference offset: a non-fp32 model or an unknown executor is a spec error
naming the field; with a KL on a LoRA model the move off the reference reaches the all-zero B matrices, or the
adapter's product, and with it the KL, would stay 0."""

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


def test_the_audit_refuses_a_model_that_is_not_fp32(tmp_path: Path, sfumato_home: Path) -> None:
    path = spec_file(tmp_path, audit_spec(model={"precision": "bf16"}))
    with pytest.raises(SpecError) as refused:
        audit(path, ["lean_retain"])
    assert refused.value.field == "model.precision" and "'fp32'" in refused.value.message


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
