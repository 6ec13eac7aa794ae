"""jagg's own step report (trainer/executors/jagg.py) on one replayed trajectory, batch 2, K = 5 trained steps, W = 2:
its timings fit inside the step, and it counts its routed groups, its backwards (one joint backward per routed group,
one per unrouted step) and its kept graphs (two endpoints per sample when it routes). Its gradient against native's:
tests/executors/test_jagg_against_native.py and tests/executors/test_audit.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.executors.conftest import audit_spec
from tests.executors.session_step import SessionStep, session_step
from trainer.audit import AuditSession
from trainer.executors.jagg import JaggExecutor
from trainer.spec import JaggOptions, parse_spec

ALGORITHM = {"sampling_steps": 6, "prompts_per_step": 1, "group_size": 2}
SAMPLES, TRAINED = 2, 5


@pytest.fixture(scope="module")
def session(sfumato_home: Path, tiny_model_dir: Path) -> AuditSession:
    return AuditSession(parse_spec(audit_spec(algorithm=ALGORITHM)), ["native", "jagg"])


def jagg_step(session: AuditSession, jagg_frac: float) -> SessionStep:
    return session_step(session, JaggExecutor(session.job, JaggOptions(group_width=2, jagg_frac=jagg_frac)))


def test_jagg_s_timings_are_non_negative_and_fit_inside_the_step(session: AuditSession) -> None:
    step = jagg_step(session, 1.0)
    phases = [step.metrics[f"time/{phase}"] for phase in ("rollout", "reward", "train", "sync")]
    assert all(value >= 0 for value in phases) and sum(phases[:3]) <= step.seconds
    assert step.metrics["time/sync"] <= step.metrics["time/train"]  # synchronising is part of training


def test_a_routed_step_backwards_each_group_once_and_each_unrouted_step_once(session: AuditSession) -> None:
    """jagg_frac 1: ceil(5/2) = 3 groups asked, the 2 full ones routed: 2 joint backwards and 1 unrouted step's."""
    metrics = jagg_step(session, 1.0).metrics
    assert metrics["executor/routed_groups"] == 2 and metrics["executor/backward_passes"] == 3


def test_a_routed_step_keeps_two_endpoint_graphs_per_sample_and_an_unrouted_one_one(session: AuditSession) -> None:
    assert jagg_step(session, 1.0).metrics["executor/retained_graphs"] == 2 * SAMPLES
    assert jagg_step(session, 0.0).metrics["executor/retained_graphs"] == SAMPLES


def test_without_a_routed_group_jagg_backwards_every_trained_step_as_native_does(session: AuditSession) -> None:
    metrics = jagg_step(session, 0.0).metrics
    assert metrics["executor/routed_groups"] == 0 and metrics["executor/backward_passes"] == TRAINED


def test_jagg_holds_no_buffer_and_counts_no_synchronisation_on_one_process(session: AuditSession) -> None:
    metrics = jagg_step(session, 1.0).metrics
    assert metrics["executor/buffer_bytes"] == 0 and metrics["executor/sync_count"] == 0
