"""native's step and its re-forward update (trainer/executors/native.py, recompute.py) on one replayed trajectory,
batch 2, K = 3, two updates a rollout: its first gradient is the one lean_retain forms from the rollout's own graphs,
bit for bit (the E0 reference); it takes one optimizer step per inner epoch, the second at moved weights; and it
reports the terms it trained on and timings that fit inside the step."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.executors.conftest import audit_spec
from tests.executors.session_step import session_step
from trainer.audit import AuditSession
from trainer.executors.native import NativeExecutor
from trainer.spec import NativeOptions, parse_spec

ALGORITHM = {"inner_epochs": 2, "sampling_steps": 4, "prompts_per_step": 1, "group_size": 2, "kl_beta": 0.04}


@pytest.fixture(scope="module")
def session(sfumato_home: Path, tiny_model_dir: Path) -> AuditSession:
    hybrid = {"name": "lean_retain", "after_first_update": "native"}
    return AuditSession(parse_spec(audit_spec(algorithm=ALGORITHM, executor=hybrid)), ["native", "lean_retain"])


def test_native_s_first_gradient_is_the_one_lean_retain_forms_from_its_rollout_graphs(session: AuditSession) -> None:
    native, retain = session.capture("native"), session.capture("lean_retain")
    assert float(native.gradient.norm()) > 0
    assert torch.equal(native.gradient, retain.gradient)


def test_native_s_two_updates_move_the_weights_as_the_hybrid_schedule_s_do(session: AuditSession) -> None:
    """The hybrid schedule's second update is native's re-forward: one update more or fewer, or another first
    update, moves the weights elsewhere."""
    native, retain = session.capture("native"), session.capture("lean_retain")
    assert float(native.update.norm()) > 0
    assert torch.equal(native.update, retain.update)


def test_native_reports_the_loss_kl_and_clip_fraction_of_the_terms_it_trained_on(session: AuditSession) -> None:
    native, retain = session.capture("native"), session.capture("lean_retain")
    assert native.metrics["kl"] > 0 and native.metrics["loss"] != 0
    for key in ("loss", "kl", "clip_frac"):
        assert native.metrics[key] == pytest.approx(retain.metrics[key], rel=1e-6, abs=1e-9), key


def native_step(session: AuditSession) -> tuple[dict[str, float], float]:
    step = session_step(session, NativeExecutor(session.job, NativeOptions()))
    return step.metrics, step.seconds


def test_native_steps_the_optimizer_once_per_inner_epoch_the_second_at_moved_weights(session: AuditSession) -> None:
    metrics, _ = native_step(session)
    steps = {int(state["step"]) for state in session.job.optimizer.state.values()}
    assert steps == {ALGORITHM["inner_epochs"]}
    assert metrics["ratio/max_abs_dev"] > 0 and metrics["grad_norm"] > 0  # the second update's ratio is not 1


def test_native_s_timings_are_non_negative_and_fit_inside_the_step(session: AuditSession) -> None:
    metrics, seconds = native_step(session)
    phases = [metrics[f"time/{phase}"] for phase in ("rollout", "reward", "train", "sync")]
    assert all(value >= 0 for value in phases) and sum(phases[:3]) <= seconds
    assert metrics["time/sync"] <= metrics["time/train"]  # synchronising is part of training


def test_native_reports_the_step_s_collectives_none_on_one_process(session: AuditSession) -> None:
    """The counts come from the job's collective counters (two ranks: tests/executors/test_fsdp_lean.py)."""
    metrics, _ = native_step(session)
    assert (metrics["executor/param_all_gathers"], metrics["executor/grad_reductions"]) == (0.0, 0.0)
