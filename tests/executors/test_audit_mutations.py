"""Errors users would pay for, injected in-process into one executor (native keeps the right code): the audit judges
the KL term apart from the policy-gradient term, and every optimizer update of the step, so each of them fails it.

- A KL scaled by 1.01 in lean_reweight or lean_retain, on DanceGRPO with Flow-GRPO's β for Wan (0.004): the KL's
  share of the whole gradient is so small that the whole loss stays within E1 (about 6e-6), but the KL term alone is
  1 % off.
- A stale old log-prob in the hybrid schedule's second update (inner epoch 2): its ratio is taken against the
  log-probs the policy gives after update 1 instead of the rollout's, so the ratio is 1 and the clip never acts.
  The first update is untouched, so an audit of the first update alone passed it.
- A hybrid schedule that skips its second update.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import torch
from test_audit import DANCE_GROUP_STD

import trainer.executors.jagg_reweight
import trainer.executors.lean_retain
import trainer.executors.lean_reweight
from tests.executors.conftest import audit_spec
from trainer.algorithms.base import StepPlan
from trainer.audit import CLASS_BOUNDS, audit
from trainer.executors.recompute import recompute_update
from trainer.executors.step_report import StepReport
from trainer.job import TrainingJob
from trainer.loss import reference_kl
from trainer.rollout import Trajectory

LEAN = {"lean_retain": trainer.executors.lean_retain, "lean_reweight": trainer.executors.lean_reweight}
DANCE_KL = {**DANCE_GROUP_STD, "kl_beta": 0.004}
JAGG_KL = {"name": "jagg_reweight", "kl": "extra_vjp", "group_width": 4}
HYBRID = {"name": "lean_retain", "after_first_update": "native"}  # lean_reweight shares after_first_update


def audited(tmp_path: Path, spec: dict[str, Any], name: str) -> dict[str, Any]:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    return audit(path, [name])["executors"][name]


def kl_spec() -> dict[str, Any]:
    return audit_spec(algorithm=DANCE_KL, executor={"name": "lean_reweight", "kl": "extra_vjp"})


@pytest.mark.parametrize("name", list(LEAN))
def test_the_right_kl_passes_on_both_terms(tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, name: str) -> None:
    result = audited(tmp_path, kl_spec(), name)
    terms = result["updates"][0]["terms"]
    assert result["verdict"] == "pass" and set(terms) == {"total", "policy", "kl"}
    assert all(t["rel_l2"] <= CLASS_BOUNDS["E1"] and t["verdict"] == "pass" for t in terms.values())


@pytest.mark.parametrize("name", list(LEAN))
def test_a_kl_scaled_by_1_01_fails_the_audit_on_its_kl_term_though_the_whole_loss_stays_within_e1(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    def scaled(mean: torch.Tensor, reference: torch.Tensor, kl_std: torch.Tensor) -> torch.Tensor:
        return 1.01 * reference_kl(mean, reference, kl_std)

    monkeypatch.setattr(LEAN[name], "reference_kl", scaled)
    result = audited(tmp_path, kl_spec(), name)
    terms = result["updates"][0]["terms"]
    assert (result["class"], result["verdict"]) == ("E1", "fail")
    assert terms["total"]["verdict"] == "pass" and terms["policy"]["verdict"] == "pass"  # the KL's share hides it
    assert terms["kl"]["verdict"] == "fail" and terms["kl"]["rel_l2"] == pytest.approx(0.01, rel=0.01)
    assert result["worst"] == {"update": 1, "term": "kl", "rel_l2": terms["kl"]["rel_l2"], "verdict": "fail"}


def refreshed_old_log_probs(
    job: TrainingJob, trajectory: Trajectory, plan: StepPlan, advantages: torch.Tensor, report: StepReport
) -> float:
    """Native's later update, but with the old log-probs of its trained steps refreshed from the current policy."""
    log_probs = trajectory.log_probs.clone()
    rows = torch.arange(log_probs.shape[0])
    with torch.no_grad():
        for position in range(plan.trained.shape[1]):
            index = plan.trained[:, position]
            x, x_next = trajectory.latents[rows, index], trajectory.latents[rows, index + 1]
            out = job.denoiser.toward(job.policy, x, index, trajectory.cond, trajectory.uncond, x_next)
            log_probs[rows, index] = out.log_prob
    return recompute_update(job, dataclasses.replace(trajectory, log_probs=log_probs), plan, advantages, report)


def skipped(
    job: TrainingJob, trajectory: Trajectory, plan: StepPlan, advantages: torch.Tensor, report: StepReport
) -> float:
    """No later update at all."""
    return 0.0


def hybrid_spec() -> dict[str, Any]:
    return audit_spec(algorithm={"inner_epochs": 2}, executor=HYBRID)


@pytest.mark.parametrize("name", list(LEAN))
def test_every_update_of_the_hybrid_schedule_is_judged_and_passes(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, name: str
) -> None:
    result = audited(tmp_path, hybrid_spec(), name)
    assert [u["update"] for u in result["updates"]] == [1, 2]
    assert [u["terms"]["total"]["verdict"] for u in result["updates"]] == ["pass", "pass"]
    assert result["verdict"] == "pass"


@pytest.mark.parametrize("name", list(LEAN))
def test_a_stale_old_log_prob_in_inner_epoch_2_fails_the_audit_on_the_second_update(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(LEAN[name], "recompute_update", refreshed_old_log_probs)
    result = audited(tmp_path, hybrid_spec(), name)
    first, second = (u["terms"]["total"] for u in result["updates"])
    assert first["verdict"] == "pass"  # what an audit of the first update alone saw
    assert second["verdict"] == "fail" and second["rel_l2"] > 1.0
    assert result["verdict"] == "fail" and result["worst"]["update"] == 2


@pytest.mark.parametrize("name", list(LEAN))
def test_a_hybrid_schedule_that_skips_its_second_update_fails_the_audit(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setattr(LEAN[name], "recompute_update", skipped)
    result = audited(tmp_path, hybrid_spec(), name)
    assert result["updates_taken"] == 1
    assert [u["terms"]["total"]["verdict"] for u in result["updates"]] == ["pass"]  # the one update both took
    assert result["verdict"] == "fail"


def test_a_kl_scaled_by_1_01_in_jagg_reweight_fails_its_audit_against_jagg_on_the_kl_term(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def scaled(mean: torch.Tensor, reference: torch.Tensor, kl_std: torch.Tensor) -> torch.Tensor:
        return 1.01 * reference_kl(mean, reference, kl_std)

    monkeypatch.setattr(trainer.executors.jagg_reweight, "reference_kl", scaled)
    spec = audit_spec(algorithm={**DANCE_KL, "train_timesteps": 5, "sampling_steps": 6}, executor=JAGG_KL)
    result = audited(tmp_path, spec, "jagg_reweight")
    against = result["against_jagg"]
    assert against["verdict"] == "fail" and against["terms"]["kl"]["verdict"] == "fail"
    assert against["terms"]["policy"]["verdict"] == "pass"
    assert result["verdict"] == "fail"  # its verdict is the worse of the two judgements (against native: a report)
