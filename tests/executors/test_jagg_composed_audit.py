"""JAGG composed with the Lean executors (issue 29 items 1 and 4): jagg_retain and jagg_reweight run jagg's
estimator on Lean's schedules, so the audit reports them as class A against native and holds them to jagg's own
gradient up to summation order (relative L2 within the E1 bound), on SD3 full fine-tuning (Flow-GRPO with a KL),
FLUX LoRA under DanceGRPO, Wan, and MixGRPO's window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.executors.conftest import audit_spec, torchrun
from trainer.audit import audit

COMPOSED = ["jagg_retain", "jagg_reweight"]
# K = 5 trained steps, W = 4: one routed group (two interior steps) and one unrouted step.
ROUTING = {"group_width": 4, "jagg_frac": 0.6}
SPECS = {
    "sd3-full-flow-grpo-kl": audit_spec(
        algorithm={"sampling_steps": 6, "kl_beta": 0.04},
        executor={"name": "jagg_reweight", "kl": "extra_vjp", **ROUTING},
    ),
    "flux-lora-dance-grpo": audit_spec(
        model={"family": "flux", "finetune": "lora", "lora_rank": 4},
        algorithm={
            "name": "dance_grpo",
            "sampling_steps": 8,
            "train_timesteps": 5,
            "global_std": False,
            "group_size": 4,
            "prompts_per_step": 1,
        },
        executor={"name": "jagg_retain", **ROUTING},
    ),
    "wan-full-flow-grpo": audit_spec(
        model={"family": "wan"}, algorithm={"sampling_steps": 6}, executor={"name": "jagg_retain", **ROUTING}
    ),
    "sd3-full-two-routed-groups": audit_spec(  # K = 5, W = 2: two routed groups, one unrouted step
        algorithm={"sampling_steps": 6}, executor={"name": "jagg_retain", "group_width": 2, "jagg_frac": 1.0}
    ),
    "sd3-mix-grpo": audit_spec(
        algorithm={"name": "mix_grpo", "sampling_steps": 8, "window_size": 4},
        executor={"name": "jagg_retain", "group_width": 4, "jagg_frac": 1.0},
    ),
}


@pytest.fixture(scope="module", params=list(SPECS), ids=list(SPECS))
def report(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory, sfumato_home: Path, tiny_model_dir: Path
) -> dict[str, Any]:
    path = tmp_path_factory.mktemp("composed") / "spec.json"
    path.write_text(json.dumps(SPECS[request.param]))
    result = audit(path, ["jagg", *COMPOSED])
    print(request.param, json.dumps(summary(result)))  # the figures the closing note quotes (pytest -s)
    return result["executors"]


def summary(result: dict[str, Any]) -> dict[str, Any]:
    keys = ("cosine", "rel_l2")
    executors = result["executors"]
    return {
        name: {"vs_native": {k: executors[name][k] for k in keys}}
        | ({"vs_jagg": {k: executors[name]["against_jagg"][k] for k in (*keys, "bound")}} if name != "jagg" else {})
        for name in executors
    }


@pytest.mark.parametrize("name", COMPOSED)
def test_a_composed_executor_is_jagg_s_gradient_up_to_summation_order(report: dict[str, Any], name: str) -> None:
    against = report[name]["against_jagg"]
    assert against["verdict"] == "pass" and against["rel_l2"] <= against["bound"]
    assert against["cosine"] >= 1 - 1e-9 and against["grad_norm"] > 0


@pytest.mark.parametrize("name", COMPOSED)
def test_a_composed_executor_is_reported_as_class_a_against_native_as_jagg_is(
    report: dict[str, Any], name: str
) -> None:
    composed, jagg = report[name], report["jagg"]
    assert (composed["class"], composed["verdict"]) == ("A", "report")
    assert composed["routed_groups"] == jagg["routed_groups"] >= 1
    assert composed["cosine"] == pytest.approx(jagg["cosine"], abs=1e-6)
    assert composed["rel_l2"] == pytest.approx(jagg["rel_l2"], rel=1e-3, abs=1e-6)


@pytest.mark.slow
def test_on_two_gloo_ranks_each_composed_executor_is_jagg_s_gradient_up_to_summation_order(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """Lean's shared-prompt layout and one reduction per step against jagg's sharded rows and its own reduction."""
    spec = audit_spec(
        algorithm={"sampling_steps": 6}, executor={"name": "jagg_retain", **ROUTING}, resources={"devices": 2}
    )
    result = torchrun(tmp_path, sfumato_home, spec, "audit", "--executors", ",".join(["jagg", *COMPOSED]))
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout[result.stdout.index("{") :])
    assert report["world_size"] == 2 and report["layout"] == "shared"
    print("two-ranks", json.dumps(summary(report)))
    for name in COMPOSED:
        against = report["executors"][name]["against_jagg"]
        assert against["verdict"] == "pass" and against["rel_l2"] <= against["bound"], name


def test_the_hybrid_schedule_takes_native_s_later_updates_after_the_composed_first(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    """Two optimizer steps a rollout with ``after_first_update: native``: the composed executors take both, the first
    still jagg's gradient."""
    spec = audit_spec(
        algorithm={"sampling_steps": 6, "inner_epochs": 2},
        executor={"name": "jagg_reweight", "after_first_update": "native", **ROUTING},
    )
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    executors = audit(path, ["jagg", *COMPOSED])["executors"]
    for name in COMPOSED:
        assert executors[name]["updates_taken"] == 2 and executors[name]["against_jagg"]["verdict"] == "pass", name
