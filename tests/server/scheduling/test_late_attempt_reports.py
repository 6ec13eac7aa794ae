"""What a killed attempt left in its spool arrives after the next attempt started: stored, and superseded
from where the later attempt resumed, so every step keeps exactly one live value."""

from __future__ import annotations

import pytest
from sqlalchemy.orm import Session, sessionmaker

from server.models import Job
from server.services.errors import Conflict
from server.services.metric_history import metric_history
from server.services.metrics import store_metric_batch
from trainer.spec.ingest import MetricBatch


def batch(attempt: int, steps: range) -> MetricBatch:
    points = [{"step": s, "wall_time": float(s), "values": {"loss": float(10 * attempt + s)}} for s in steps]
    return MetricBatch.model_validate({"attempt": attempt, "steps": points})


def live_points(factory: sessionmaker[Session], job_id: int) -> dict[int, int]:
    with factory() as session:
        rows = [(p.step, p.attempt) for p in metric_history(session, job_id, "loss", -1, 1000) if p.current]
    steps = [step for step, _ in rows]
    assert len(steps) == len(set(steps)), f"a step has two live values: {sorted(rows)}"
    return dict(rows)


def test_late_points_of_an_earlier_attempt_stay_live_only_before_the_resume_step(factory, add_job):
    job_id = add_job(attempt=2).id
    with factory() as session:
        job = session.get(Job, job_id)
        store_metric_batch(session, job, batch(1, range(1, 3)), 1000)  # attempt 1 reported steps 1-2, then died
        store_metric_batch(session, job, batch(2, range(5, 7)), 1000)  # attempt 2 resumed after checkpoint 4
        store_metric_batch(session, job, batch(1, range(3, 7)), 1000)  # attempt 1's spool, shipped late

    assert live_points(factory, job_id) == {1: 1, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2}


def test_points_of_an_attempt_newer_than_the_job_s_are_refused(factory, add_job):
    job_id = add_job(attempt=1).id
    with factory() as session, pytest.raises(Conflict):
        store_metric_batch(session, session.get(Job, job_id), batch(2, range(1, 2)), 1000)
