"""Correctness of the fast metric paths (bench/platform_speed.py measures their speed), on SQLite and PostgreSQL.

Ingestion: a new batch COPied straight into `metrics`, a re-sent or overlapping one through staging and
ON CONFLICT DO NOTHING (on PostgreSQL also the fallback when the probe misses an overlap), keys that need
escaping in COPY's text format, and supersession that a later attempt's first batch does once. Reads:
downsampling through the rollups keeps every bucket's extremes and the last point on one step axis, and
the rollups agree with the points after re-sends and supersession.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

import pytest
from sqlalchemy import create_engine, func, select
from sqlalchemy.orm import Session

from server.migrate import upgrade
from server.models import METRIC_BLOCK_STEPS, Job, Metric, MetricBlock
from server.schemas.metrics import MetricBatch
from server.services.metric_blocks import repair
from server.services.metrics import metric_keys, metric_series, store_metric_batch

SPIKE_UP, SPIKE_DOWN = 1234, 2345


@pytest.fixture
def session(database_url: str) -> Iterator[Session]:
    upgrade(database_url)
    engine = create_engine(database_url)
    with Session(engine, expire_on_commit=False) as s:
        yield s
    engine.dispose()


def new_job(session: Session) -> Job:
    job = Job(
        name="perf", spec={}, algorithm="flow_grpo", executor="native", model_family="sd3",
        device_type="cpu", devices=1, attempt=1, status="running",
    )  # fmt: skip
    session.add(job)
    session.commit()
    return job


def curve(key: str, step: int, attempt: int = 1) -> float:
    spike = 50.0 if step == SPIKE_UP else -50.0 if step == SPIKE_DOWN else 0.0
    return math.sin(step / 30 + len(key)) + spike + 1000.0 * (attempt - 1)


def send(session: Session, job: Job, steps: range, keys: list[str], attempt: int = 1) -> int:
    batch = MetricBatch.model_validate(
        {
            "attempt": attempt,
            "seq": steps.start,
            "steps": [
                {"step": s, "wall_time": 1e9 + s, "values": {k: curve(k, s, attempt) for k in keys}} for s in steps
            ],
        }
    )
    stored, _skipped = store_metric_batch(session, job, batch, max_points=1_000_000)
    return stored


def stored_points(session: Session, job: Job) -> list[tuple[str, int, int, float]]:
    rows = session.execute(
        select(Metric.key, Metric.step, Metric.attempt, Metric.value)
        .where(Metric.job_id == job.id)
        .order_by(Metric.key, Metric.step, Metric.attempt)
    )
    return [tuple(row) for row in rows]  # type: ignore[misc]


def test_a_resent_batch_stores_nothing_twice(session: Session) -> None:
    job = new_job(session)
    keys = ["loss", "reward/mean"]
    assert send(session, job, range(0, 100), keys) == 200
    before = stored_points(session, job)
    assert send(session, job, range(0, 100), keys) == 0
    assert stored_points(session, job) == before


def test_an_overlap_the_probe_misses_stores_only_the_new_points(session: Session) -> None:
    """The probe looks at the batch's first key; here that key is new, so PostgreSQL's COPY meets a duplicate
    of another key, rolls back to its savepoint and goes through staging."""
    job = new_job(session)
    assert send(session, job, range(0, 10), ["loss"]) == 10
    assert send(session, job, range(0, 20), ["a/new", "loss"]) == 20 + 10
    counts = dict(
        session.execute(select(Metric.key, func.count()).where(Metric.job_id == job.id).group_by(Metric.key)).all()
    )
    assert counts == {"a/new": 20, "loss": 20}


def test_keys_that_copy_must_escape_arrive_unchanged(session: Session) -> None:
    job = new_job(session)
    keys = ["tab\there", "back\\slash", "new\nline", "cr\rkey", "quote'\"", "ünïcode/ключ", "\\N"]
    assert send(session, job, range(0, 3), keys) == 21
    assert metric_keys(session, job.id) == sorted(keys)
    assert {value for *_rest, value in stored_points(session, job)} == {curve(k, s) for k in keys for s in range(3)}


def test_downsampling_keeps_the_extremes_and_the_last_point_on_one_axis(session: Session) -> None:
    job = new_job(session)
    keys = ["loss", "reward/mean", "kl"]
    for start in range(0, 4000, 1000):
        send(session, job, range(start, start + 1000), keys)
    series = metric_series(session, job.id, keys, 300)
    assert series[0].steps == series[1].steps == series[2].steps
    assert len(series[0].steps) <= 300
    for s in series:
        points = dict(zip(s.steps, s.values, strict=True))
        assert points[SPIKE_UP] == curve(s.key, SPIKE_UP) and points[SPIKE_DOWN] == curve(s.key, SPIKE_DOWN)
        assert s.steps[-1] == 3999 and points[3999] == curve(s.key, 3999)
        assert all(v == curve(s.key, step) for step, v in points.items())  # real points, every key at every step


def test_superseded_points_leave_the_series_and_the_rollups(session: Session) -> None:
    """Attempt 2 resumes at step 1000 in three batches: the first supersedes attempt 1 from there, the next
    ones find the attempt's own earlier points and skip; charts show attempt 2 from step 1000 on."""
    job = new_job(session)
    keys = ["loss", "reward/mean"]
    send(session, job, range(0, 3000), keys)
    job.attempt = 2
    session.commit()
    for start in (1000, 1500, 2000):
        send(session, job, range(start, start + 500), keys, attempt=2)
    send(session, job, range(1500, 2000), keys, attempt=2)  # a re-send of the second batch
    live = session.execute(
        select(Metric.attempt, func.min(Metric.step), func.max(Metric.step), func.count())
        .where(Metric.job_id == job.id, Metric.superseded.is_(False))
        .group_by(Metric.attempt)
        .order_by(Metric.attempt)
    ).all()
    assert [tuple(row) for row in live] == [(1, 0, 999, 2000), (2, 1000, 2499, 3000)]
    series = metric_series(session, job.id, keys, 240)
    for s in series:
        for step, value in zip(s.steps, s.values, strict=True):
            assert value == curve(s.key, step, attempt=1 if step < 1000 else 2)
    assert series[0].steps[-1] == 2499
    assert_rollups_match_the_points(session, job)


def test_rollups_match_the_points_after_resends_overlaps_and_supersession(session: Session) -> None:
    job = new_job(session)
    keys = ["loss", "reward/mean"]
    send(session, job, range(0, 500), keys)
    send(session, job, range(0, 500), keys)
    send(session, job, range(400, 700), ["new/key", *keys])
    job.attempt = 2
    session.commit()
    send(session, job, range(333, 600), keys, attempt=2)
    assert_rollups_match_the_points(session, job)


def assert_rollups_match_the_points(session: Session, job: Job) -> None:
    """Every rollup block equals one recomputed from the live points: count, sum, first, min, max, last."""
    repair(session, job.id)
    expected: dict[tuple[str, int], list[tuple[int, float, float]]] = {}
    rows = session.execute(
        select(Metric.key, Metric.step, Metric.value, Metric.wall_time).where(
            Metric.job_id == job.id, Metric.superseded.is_(False)
        )
    )
    for key, step, value, wall in rows:
        expected.setdefault((key, step // METRIC_BLOCK_STEPS), []).append((step, value, wall))
    blocks = {(b.key, b.block): b for b in session.scalars(select(MetricBlock).where(MetricBlock.job_id == job.id))}
    assert set(blocks) == set(expected)
    for where, points in expected.items():
        block = blocks[where]
        low = min(points, key=lambda p: (p[1], p[0]))
        high = min(points, key=lambda p: (-p[1], p[0]))
        first, last = min(points), max(points)
        assert (block.n, block.first_step, block.last_step, block.last_value) == (len(points), first[0], *last[:2])
        assert (block.min_step, block.min_value, block.max_step, block.max_value) == (*low[:2], *high[:2])
        assert block.total == pytest.approx(sum(p[1] for p in points))
        assert not block.dirty
