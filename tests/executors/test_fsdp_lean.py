"""The Lean executors under FSDP2 (two gloo ranks, full fine-tuning): the audit passes their class bound
against native under FSDP, with a KL at weights moved off the reference and the hybrid schedule's second
update; each reduces its first update's gradient once where native reduce-scatters after every trained
step's backward, and reports native's loss, clip fraction and KL."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.executors.conftest import audit_spec, torchrun

TRAINED, UPDATES = 3, 2  # T = 4, K = T - 1; two optimizer updates per rollout


@pytest.mark.slow
def test_lean_executors_under_fsdp_pass_the_audit_and_reduce_once_per_update(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = audit_spec(
        model={"sharding": "fsdp"},
        resources={"devices": 2},
        algorithm={"kl_beta": 0.04, "inner_epochs": UPDATES},
        executor={"name": "lean_reweight", "kl": "extra_vjp", "after_first_update": "native"},
    )
    result = torchrun(tmp_path, sfumato_home, spec, "audit", "--executors", "native,lean_retain,lean_reweight")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout[result.stdout.index("{") : result.stdout.rindex("}") + 1])
    assert report["sharding"] == "fsdp" and report["world_size"] == 2
    native = report["native_metrics"]
    assert report["reference_offset"] > 0 and native["kl"] > 0 and native["clip_frac"] > 0
    units = native["executor/grad_reductions"] / (UPDATES * TRAINED)  # native: every unit, every backward
    for name in ("lean_retain", "lean_reweight"):
        audited = report["executors"][name]
        # Native reduces each backward's gradient; a Lean executor sums its backwards first (E1).
        assert audited["class"] == "E1" and audited["verdict"] == "pass", name
        assert audited["rel_l2"] <= audited["bound"] and audited["grad_norm"] > 0, name
        # The first update reduces once per unit; the second is native's re-forward.
        reductions = audited["metrics"]["executor/grad_reductions"]
        assert native["executor/grad_reductions"] - reductions == (TRAINED - 1) * units, name
        for key in ("loss", "clip_frac", "kl"):  # the second update ran at the right weights
            assert abs(audited["metrics"][key] - native[key]) <= audited["bound"] * max(1.0, abs(native[key])), key
