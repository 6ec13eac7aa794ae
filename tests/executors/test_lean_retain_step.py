"""lean_retain's own step (trainer/executors/lean_retain.py) on one replayed trajectory, batch 2: its timings fit
inside the step, and it reports a kept graph per local sample and trained step (its gradient against native's:
tests/executors/test_native_step.py and tests/executors/test_audit.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.conftest import audit_spec
from tests.executors.session_step import SessionStep, session_step
from trainer.audit import AuditSession
from trainer.executors.lean_retain import LeanRetainExecutor
from trainer.spec import LeanRetainOptions, parse_spec, retained_graph_bound

ALGORITHM = {"sampling_steps": 4, "prompts_per_step": 1, "group_size": 2}


@pytest.fixture(scope="module")
def session(sfumato_home: Path, tiny_model_dir: Path) -> AuditSession:
    return AuditSession(parse_spec(audit_spec(algorithm=ALGORITHM)), ["native", "lean_retain"])


def retain_step(session: AuditSession) -> SessionStep:
    return session_step(session, LeanRetainExecutor(session.job, LeanRetainOptions()))


def test_lean_retain_s_timings_are_non_negative_and_fit_inside_the_step(session: AuditSession) -> None:
    step = retain_step(session)
    phases = [step.metrics[f"time/{phase}"] for phase in ("rollout", "reward", "train", "sync")]
    assert all(value >= 0 for value in phases) and sum(phases[:3]) <= step.seconds
    assert step.metrics["time/sync"] <= step.metrics["time/train"]  # synchronising is part of training


def test_lean_retain_reports_a_kept_graph_per_local_sample_and_trained_step(session: AuditSession) -> None:
    algorithm = session.job.spec.algorithm
    samples = algorithm.prompts_per_step * algorithm.group_size
    assert retain_step(session).metrics["executor/retained_graphs"] == samples * algorithm.train_timesteps


def test_lean_retain_counts_no_gradient_synchronisation_on_one_process(session: AuditSession) -> None:
    """executor/sync_count: one per update on several ranks (tests/executors/test_training.py), none on one."""
    assert retain_step(session).metrics["executor/sync_count"] == 0


@pytest.mark.parametrize(("over", "falls_back"), [(0, False), (1, True)], ids=["at the limit", "one over"])
def test_the_memory_guard_s_schedule_runs_only_when_the_graphs_exceed_max_retained_graphs(
    session: AuditSession, over: int, falls_back: bool
) -> None:
    limit = retained_graph_bound(session.job.spec) - over
    options = LeanRetainOptions(max_retained_graphs=limit, on_memory_guard="native")
    assert (LeanRetainExecutor(session.job, options).fallback is not None) == falls_back
