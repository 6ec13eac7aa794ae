"""The gradient audit of docs/executors.md §4 on the tiny model: thresholds in one process and
with two gloo ranks under torchrun (digenrl's generator and trainer included); JAGG reported, and
equal to native when nothing is routed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec, torchrun
from trainer.audit import CLASS_BOUNDS, audit
from trainer.loss import reference_kl


def run_audit(tmp_path: Path, spec: dict[str, Any], names: str) -> dict[str, Any]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return audit(path, names.split(","))["executors"]


# DanceGRPO with each group's own std: the affine correction of lean_reweight (also the mutation tests' spec).
DANCE_GROUP_STD = {
    "name": "dance_grpo",
    "train_timesteps": 2,
    "noise_level": 0.3,
    "global_std": False,
    "group_size": 4,
    "prompts_per_step": 1,
}


@pytest.mark.parametrize(
    "sections",
    [
        {"algorithm": {"kl_beta": 0.04, "cfg_scale": 3.0}, "executor": {"name": "lean_reweight", "kl": "extra_vjp"}},
        {"algorithm": DANCE_GROUP_STD},
    ],
    ids=["flow-global-std-kl-cfg", "dance-group-std-affine"],
)
def test_lean_executors_reproduce_native_gradient_in_one_process(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, sections: dict[str, Any]
) -> None:
    report = run_audit(tmp_path, audit_spec(**sections), "native,lean_retain,lean_reweight")
    retain, reweight = report["lean_retain"], report["lean_reweight"]
    # Flow-GRPO: one step for every row at each position, backwarded in native's order: bit for bit.
    # DanceGRPO: positions share graphs, summed into one backward: another summation order.
    assert retain["class"] == ("E0" if sections["algorithm"].get("name") is None else "E1")
    assert retain["verdict"] == "pass" and retain["rel_l2"] <= retain["bound"]
    assert retain["bitwise_equal"] is (retain["class"] == "E0")
    assert reweight["class"] == "E1" and reweight["verdict"] == "pass" and reweight["rel_l2"] <= 1e-5
    assert reweight["grad_norm"] > 0
    assert len(retain["worst_tensors"]) == 5


def test_with_a_kl_the_audit_runs_off_the_reference_and_fails_a_wrongly_scaled_kl(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """At the reference weights the KL's gradient is 0 and any KL bug passes; the audit moves off them."""
    import trainer.executors.lean_retain
    import trainer.executors.lean_reweight

    spec = audit_spec(
        algorithm={"kl_beta": 0.04, "global_std": False}, executor={"name": "lean_reweight", "kl": "extra_vjp"}
    )
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    right = audit(path, ["lean_retain", "lean_reweight"])
    assert right["reference_offset"] > 0 and right["native_metrics"]["kl"] > 0
    assert [e["verdict"] for e in right["executors"].values()] == ["pass", "pass"]

    def doubled(mean: torch.Tensor, reference: torch.Tensor, kl_std: torch.Tensor) -> torch.Tensor:
        return 2 * reference_kl(mean, reference, kl_std)

    for module in (trainer.executors.lean_retain, trainer.executors.lean_reweight):
        monkeypatch.setattr(module, "reference_kl", doubled)  # native keeps the right KL
    wrong = audit(path, ["lean_retain", "lean_reweight"])
    assert [e["verdict"] for e in wrong["executors"].values()] == ["fail", "fail"]
    assert wrong["executors"]["lean_reweight"]["rel_l2"] > 10 * CLASS_BOUNDS["E1"]


def test_jagg_is_reported_per_routed_group_and_is_native_when_nothing_is_routed(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    spec = audit_spec(algorithm={"sampling_steps": 6}, executor={"name": "jagg", "group_width": 2, "jagg_frac": 1.0})
    routed = run_audit(tmp_path, spec, "jagg")["jagg"]
    assert routed["verdict"] == "report"
    # W = 2: both steps of a routed group are its endpoints (alpha = 0 and 1), so the aggregate is each group's exact
    # gradient, summed in another order.
    assert routed["rel_l2"] <= 1e-6 and routed["cosine"] >= 1 - 1e-9
    assert routed["routed_groups"] == 2 and all(c >= 1 - 1e-9 for c in routed["group_cosines"])
    spec["executor"]["jagg_frac"] = 0.0
    unrouted = run_audit(tmp_path, spec, "jagg")["jagg"]
    assert unrouted["bitwise_equal"] and unrouted["rel_l2"] == 0.0 and unrouted["group_cosines"] == []


@pytest.mark.slow
def test_audit_thresholds_hold_with_two_gloo_ranks(tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path) -> None:
    spec = audit_spec(resources={"devices": 2}, executor={"name": "jagg", "group_width": 2})
    names = "native,lean_retain,lean_reweight,jagg,digenrl"
    result = torchrun(tmp_path, sfumato_home, spec, "audit", "--executors", names)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["world_size"] == 2 and report["layout"] == "shared"
    executors = report["executors"]
    assert executors["lean_retain"]["class"] == "E0" and executors["lean_retain"]["bitwise_equal"]
    assert executors["lean_reweight"]["class"] == "E1" and executors["lean_reweight"]["rel_l2"] <= 1e-5
    # jagg routes one group of width 2, whose aggregate is exact (see the one-process jagg test above).
    assert executors["jagg"]["routed_groups"] == 1 and executors["jagg"]["rel_l2"] <= 1e-6
    # One generator, one trainer, staleness forced to 0: the trainer's gradient, batched replay included.
    assert executors["digenrl"]["rel_l2"] <= 1e-5 and executors["digenrl"]["verdict"] == "pass"
    for name in ("lean_retain", "lean_reweight", "digenrl"):  # native's definitions, over all ranks' samples
        for key, want in report["native_metrics"].items():
            if key in ("loss", "clip_frac", "kl"):
                got = executors[name]["metrics"][key]
                assert abs(got - want) <= CLASS_BOUNDS["E1"] * max(1.0, abs(want)), (name, key)
    assert executors["digenrl"]["grad_norm"] > 0


@pytest.mark.parametrize(("policy", "exact"), [("native_fallback", True), ("log", False)])
def test_when_the_advantage_clip_bites_reweight_falls_back_to_native_s_exact_gradient_or_logs(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, policy: str, exact: bool
) -> None:
    """With a global std the deferred correction assumes |A| ≤ adv_clip; a clip of 0.1 bites."""
    spec = audit_spec(
        algorithm={"global_std": True, "adv_clip": 0.1}, executor={"name": "lean_reweight", "on_adv_clip": policy}
    )
    reweight = run_audit(tmp_path, spec, "lean_reweight")["lean_reweight"]
    assert (reweight["rel_l2"] <= 1e-5) is exact
