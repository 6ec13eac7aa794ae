"""MixGRPO and MixGRPO-Flash under the executors that serve Flow-GRPO: the gradient audit (docs/executors.md §4)
holds at their classes, with the window of SDE steps, Euler steps before it, Euler or Flash's DPM-Solver++ after
it, and with GRPO-Guard's τ-scaled log-probs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec
from tests.trainer.conftest import read_metrics, write_spec
from trainer.audit import audit
from trainer.run import run

MIX = {"name": "mix_grpo", "sampling_steps": 6, "window_size": 2}


def run_audit(tmp_path: Path, spec: dict[str, Any], names: list[str]) -> dict[str, Any]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return audit(path, names)["executors"]


@pytest.mark.parametrize(
    "algorithm",
    [MIX, {**MIX, "guard": True}, {**MIX, "name": "mix_grpo_flash", "ode_compression": 0.6}],
    ids=["mix", "mix-guard", "flash"],
)
def test_lean_retain_reproduces_native_s_mix_grpo_gradient_bit_for_bit(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, algorithm: dict[str, Any]
) -> None:
    retain = run_audit(tmp_path, audit_spec(algorithm=algorithm), ["native", "lean_retain"])["lean_retain"]
    assert retain["class"] == "E0" and retain["verdict"] == "pass" and retain["bitwise_equal"]
    assert retain["grad_norm"] > 0


@pytest.mark.parametrize("name", ["mix_grpo", "mix_grpo_flash"])
def test_jagg_on_mix_grpo_aggregates_each_routed_window_group_exactly(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, name: str
) -> None:
    spec = audit_spec(algorithm={**MIX, "name": name}, executor={"name": "jagg", "group_width": 2, "jagg_frac": 1.0})
    jagg = run_audit(tmp_path, spec, ["jagg"])["jagg"]
    assert jagg["verdict"] == "report" and jagg["routed_groups"] == 1
    assert jagg["rel_l2"] <= 1e-6 and jagg["cosine"] >= 1 - 1e-9


def test_lean_retain_rolls_mix_grpo_flash_out_to_native_s_images(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """The audit replays native's trajectory, so the graph rollout's own solver tail is checked here: a real
    step of each executor scores the same images (the rewards of the step equal to the last bit)."""
    rewards = {}
    for name in ("native", "lean_retain"):
        spec = audit_spec(algorithm={**MIX, "name": "mix_grpo_flash", "ode_compression": 0.6}, executor={"name": name})
        run(write_spec(tmp_path / f"{name}.json", spec), tmp_path / name, resume=False)
        rewards[name] = [step["reward/mean"] for step in read_metrics(tmp_path / name)]
    assert rewards["lean_retain"] == rewards["native"]
