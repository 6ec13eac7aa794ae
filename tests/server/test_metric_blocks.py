"""metric_blocks: the per-16-step rollups the triggers keep, and the chart reads built on them, on both databases."""

from __future__ import annotations

import math
from collections.abc import Iterator
from datetime import datetime

import pytest
from sqlalchemy import create_engine, insert, select, update
from sqlalchemy.orm import Session

from server.migrate import downgrade, upgrade
from server.models import Job, Metric, MetricBlock
from server.schemas.metrics import MetricBatch
from server.services.metric_blocks import block_series, key_figures
from server.services.metrics import metric_keys, metric_series, store_metric_batch


@pytest.fixture
def session(database_url: str) -> Iterator[Session]:
    upgrade(database_url)
    engine = create_engine(database_url)
    with Session(engine, expire_on_commit=False) as s:
        yield s
    engine.dispose()


def new_job(session: Session, attempt: int = 1) -> Job:
    job = Job(
        name="curves", spec={}, algorithm="flow_grpo", executor="native", model_family="sd3",
        device_type="cpu", devices=1, attempt=attempt, status="running",
    )  # fmt: skip
    session.add(job)
    session.commit()
    return job


def curve(step: int) -> float:
    return math.sin(step / 40) + (9.0 if step == 1234 else 0.0) - (7.0 if step == 2345 else 0.0)


def send(session: Session, job: Job, steps: range, attempt: int = 1, shift: float = 0.0) -> int:
    batch = MetricBatch.model_validate(
        {
            "attempt": attempt,
            "seq": steps.start,
            "steps": [
                {"step": s, "wall_time": 1000.0 + s, "values": {"reward/mean": curve(s) + shift, "loss": 1 / (s + 1)}}
                for s in steps
            ],
        }
    )
    stored, _skipped = store_metric_batch(session, job, batch, max_points=100_000)
    return stored


def test_long_series_come_from_the_blocks_with_every_extreme_and_the_last_point(session: Session) -> None:
    job = new_job(session)
    for start in range(0, 3000, 500):
        send(session, job, range(start, start + 500))
    from_blocks = block_series(session, job.id, ["reward/mean", "loss"], 120)
    assert from_blocks is not None
    reward = dict(zip(from_blocks[0].steps, from_blocks[0].values, strict=True))
    assert reward[1234] == pytest.approx(curve(1234)) and reward[2345] == pytest.approx(curve(2345))
    assert from_blocks[0].steps[-1] == 2999 and len(from_blocks[0].steps) <= 120
    # Every key has its value at every kept step: one shared, complete axis.
    assert all(v is not None for s in from_blocks for v in s.values)
    assert metric_series(session, job.id, ["reward/mean", "loss"], 120) == from_blocks


def test_short_range_is_left_to_the_points(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 200))
    assert block_series(session, job.id, ["loss"], 1000) is None


def test_a_resent_batch_is_not_counted_twice(session: Session) -> None:
    job = new_job(session)
    assert send(session, job, range(0, 40)) == 80
    assert send(session, job, range(20, 60)) == 40  # half of it was stored already
    figures = key_figures(session, job.id)
    assert figures["loss"].count == 60
    assert figures["reward/mean"].mean == pytest.approx(sum(curve(s) for s in range(60)) / 60)
    assert (figures["loss"].first_wall, figures["loss"].last_wall) == (1000.0, 1059.0)


def test_a_later_attempt_replaces_the_superseded_points_in_the_blocks(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 100))
    job.attempt = 2
    session.commit()
    send(session, job, range(50, 100), attempt=2, shift=100.0)  # supersedes steps 50.. of attempt 1
    figures = key_figures(session, job.id, ["reward/mean"])["reward/mean"]
    assert figures.count == 100
    assert figures.maximum == pytest.approx(100 + max(curve(s) for s in range(50, 100)))
    dirty = select(MetricBlock).where(MetricBlock.key == "reward/mean", MetricBlock.dirty.is_(True))
    assert session.scalars(dirty).all() == []  # recomputed by the read, and stored


def test_a_block_emptied_by_superseding_is_dropped(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 32))
    session.execute(update(Metric).where(Metric.job_id == job.id, Metric.step >= 16).values(superseded=True))
    session.commit()
    figures = key_figures(session, job.id, ["loss"])["loss"]
    assert figures.count == 16 and figures.last_wall == 1015.0
    blocks = session.scalars(select(MetricBlock.block).where(MetricBlock.job_id == job.id, MetricBlock.key == "loss"))
    assert list(blocks) == [0]


def test_metric_keys_lists_each_key_once_in_order(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 50))
    assert metric_keys(session, job.id) == ["loss", "reward/mean"]
    assert metric_keys(session, job.id + 1) == []


def test_upgrade_rolls_up_points_stored_before_the_blocks_existed(database_url: str) -> None:
    upgrade(database_url)
    downgrade(database_url, "0002")
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            insert(Job.__table__),
            [{"id": 7, "name": "old", "spec": {}, "status": "succeeded", "priority": 0, "algorithm": "flow_grpo",
              "executor": "native", "model_family": "sd3", "device_type": "cpu", "devices": 1, "nodes": 1,
              "attempt": 1, "max_attempts": 3, "cancel_requested": False, "step": 0, "total_steps": 0,
              "created_at": datetime(2026, 1, 1)}],
        )  # fmt: skip
        conn.execute(
            insert(Metric.__table__),
            [
                {"job_id": 7, "key": "loss", "step": s, "attempt": 1, "value": float(s % 7), "wall_time": 5.0 + s,
                 "superseded": False}
                for s in range(40)
            ],
        )  # fmt: skip
    engine.dispose()
    upgrade(database_url)
    engine = create_engine(database_url)
    with Session(engine) as session:
        figures = key_figures(session, 7)["loss"]
        assert (figures.count, figures.maximum, figures.first_wall, figures.last_wall) == (40, 6.0, 5.0, 44.0)
    engine.dispose()
