"""Metric storage in packed blocks, on SQLite and PostgreSQL: each point stored once, downsampling that equals
a direct computation from the points, and a retried attempt's points superseding the earlier attempt's."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from datetime import datetime

import pytest
from sqlalchemy import MetaData, Table, create_engine, insert, text
from sqlalchemy.orm import Session

from server.migrate import downgrade, upgrade
from server.models import METRIC_BLOCK_STEPS, Job
from server.schemas.metrics import MetricSeriesSet
from server.services.metric_figures import key_figures
from server.services.metric_history import metric_history
from server.services.metric_reads import latest_points, metric_keys, metric_series
from server.services.metrics import store_metric_batch
from trainer.spec.ingest import MetricBatch

SPIKE_UP, SPIKE_DOWN = 1234, 2345


@pytest.fixture
def session(migrated_database_url: str) -> Iterator[Session]:
    engine = create_engine(migrated_database_url)
    with Session(engine, expire_on_commit=False) as s:
        yield s
    engine.dispose()


def new_job(session: Session) -> Job:
    job = Job(
        name="curves", spec={}, algorithm="flow_grpo", executor="native", model_family="sd3",
        device_type="cpu", devices=1, attempt=1, status="running",
    )  # fmt: skip
    session.add(job)
    session.commit()
    return job


def curve(key: str, step: int, attempt: int = 1) -> float:
    spike = 50.0 if step == SPIKE_UP else -50.0 if step == SPIKE_DOWN else 0.0
    return math.sin(step / 30 + len(key)) + spike + 1000.0 * (attempt - 1)


def send(session: Session, job: Job, steps: list[int] | range, keys: list[str], attempt: int = 1) -> int:
    if attempt > job.attempt:
        job.attempt = attempt
        session.commit()
    points = [{"step": s, "wall_time": 1e9 + s, "values": {k: curve(k, s, attempt) for k in keys}} for s in steps]
    batch = MetricBatch.model_validate({"attempt": attempt, "steps": points})
    stored, _skipped = store_metric_batch(session, job, batch, max_points=1_000_000)
    return stored


def history(session: Session, job: Job, key: str) -> list[tuple[int, int, float, bool]]:
    return [(p.step, p.attempt, p.value, p.current) for p in metric_history(session, job.id, key, -1, 100_000)]


def expected_buckets(
    session: Session, job: Job, keys: list[str], got: MetricSeriesSet
) -> tuple[list[int], dict[str, list[tuple[float, float, float] | None]]]:
    """The response's buckets computed straight from the current points: bucket edges from the response's
    width (whole blocks once it spans one), per key the last value, minimum and maximum, and the axis step
    the largest last step among the keys."""
    current = {key: [(s, v) for s, _a, v, live in history(session, job, key) if live] for key in keys}
    lo = min(s for points in current.values() for s, _v in points)
    width = got.bucket_steps
    base = lo // METRIC_BLOCK_STEPS * METRIC_BLOCK_STEPS if width >= METRIC_BLOCK_STEPS else lo
    per_key: dict[str, dict[int, list[tuple[int, float]]]] = {}
    for key, points in current.items():
        for step, value in points:
            per_key.setdefault(key, {}).setdefault((step - base) // width, []).append((step, value))
    buckets = sorted({b for groups in per_key.values() for b in groups})
    axis = [max(max(groups[b])[0] for groups in per_key.values() if b in groups) for b in buckets]
    figures = {
        key: [
            (max(groups[b])[1], min(v for _s, v in groups[b]), max(v for _s, v in groups[b])) if b in groups else None
            for b in buckets
        ]
        for key, groups in per_key.items()
    }
    return axis, figures


def assert_downsampled_like_the_points(session: Session, job: Job, keys: list[str], max_points: int) -> None:
    got = metric_series(session, job.id, keys, max_points)
    axis, figures = expected_buckets(session, job, keys, got)
    assert got.bucket_steps > 1 and len(axis) <= max_points
    for series in got.series:
        assert series.steps == axis
        assert series.minimum is not None and series.maximum is not None
        rows = zip(series.values, series.minimum, series.maximum, strict=True)
        assert [None if last is None else (last, low, high) for last, low, high in rows] == figures[series.key]


def test_a_resent_batch_stores_nothing_twice(session: Session) -> None:
    job = new_job(session)
    assert send(session, job, range(0, 100), ["loss", "kl"]) == 200
    before = history(session, job, "loss")
    assert send(session, job, range(0, 100), ["loss", "kl"]) == 0
    assert history(session, job, "loss") == before


def test_an_overlapping_batch_stores_only_its_new_steps(session: Session) -> None:
    job = new_job(session)
    assert send(session, job, range(0, 300), ["loss"]) == 300
    assert send(session, job, range(200, 600), ["loss", "a/new"]) == 300 + 400
    assert [s for s, *_ in history(session, job, "loss")] == list(range(600))


def test_steps_out_of_order_or_repeated_in_a_batch_are_stored_once_in_order(session: Session) -> None:
    job = new_job(session)
    steps = [5, 3, 900, 3, 4, 600]
    assert send(session, job, steps, ["loss"]) == 5
    assert [s for s, *_ in history(session, job, "loss")] == [3, 4, 5, 600, 900]


def test_keys_with_tabs_newlines_and_unicode_arrive_unchanged(session: Session) -> None:
    job = new_job(session)
    keys = ["tab\there", "back\\slash", "new\nline", "quote'\"", "ünïcode/ключ", "\\N"]
    assert send(session, job, range(0, 3), keys) == 18
    assert metric_keys(session, job.id) == sorted(keys)


def test_a_short_range_is_the_points_themselves_on_one_axis(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 40, 2), ["loss"])
    send(session, job, range(1, 40, 2), ["kl"])
    loss, kl = metric_series(session, job.id, ["loss", "kl"], 1000).series
    assert loss.steps == kl.steps == list(range(40))
    assert loss.values[0] == curve("loss", 0) and loss.values[1] is None and kl.values[1] == curve("kl", 1)
    assert loss.minimum is None and loss.wall_times[2] == 1e9 + 2


def test_downsampling_keeps_the_global_extremes_and_the_last_point(session: Session) -> None:
    job = new_job(session)
    keys = ["loss", "reward/mean"]
    for start in range(0, 4000, 1000):
        send(session, job, range(start, start + 1000), keys)
    for max_points in (12, 300):  # buckets of whole blocks, and buckets narrower than a block
        for series in metric_series(session, job.id, keys, max_points).series:
            assert series.maximum is not None and series.minimum is not None
            assert max(v for v in series.maximum if v is not None) == curve(series.key, SPIKE_UP)
            assert min(v for v in series.minimum if v is not None) == curve(series.key, SPIKE_DOWN)
            assert (series.steps[-1], series.values[-1]) == (3999, curve(series.key, 3999))


@pytest.mark.parametrize("max_points", [7, 40, 900])
def test_downsampled_buckets_equal_a_direct_computation_from_the_points(session: Session, max_points: int) -> None:
    """Ragged keys (one starts late, one reports every third step) and random values."""
    job = new_job(session)
    noise = random.Random(max_points)
    steps = {"loss": range(0, 6000), "kl": range(700, 6000), "eval/score": range(0, 6000, 3)}
    for key, key_steps in steps.items():
        points = [{"step": s, "wall_time": float(s), "values": {key: noise.gauss(0, 1)}} for s in key_steps]
        for chunk in range(0, len(points), 1000):
            batch = MetricBatch.model_validate({"attempt": 1, "steps": points[chunk : chunk + 1000]})
            store_metric_batch(session, job, batch, max_points=100_000)
    assert_downsampled_like_the_points(session, job, list(steps), max_points)


def test_a_later_attempt_supersedes_the_earlier_from_its_first_step(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 3000), ["loss"])
    send(session, job, range(1000, 1500), ["loss"], attempt=2)  # resumed from a checkpoint at step 1000
    send(session, job, range(1500, 2500), ["loss"], attempt=2)
    send(session, job, range(3000, 3100), ["loss"], attempt=1)  # the dead attempt's spool, shipped late
    live = [(s, a) for s, a, _v, current in history(session, job, "loss") if current]
    assert live == [(s, 1) for s in range(1000)] + [(s, 2) for s in range(1000, 2500)]
    whole = metric_series(session, job.id, ["loss"], 5000).series[0]
    assert whole.steps == list(range(2500))
    assert all(v == curve("loss", s, 1 if s < 1000 else 2) for s, v in zip(whole.steps, whole.values, strict=True))
    assert latest_points(session, job.id, ["loss"])["loss"].value == curve("loss", 2499, 2)
    figures = key_figures(session, job.id, ["loss"])["loss"]
    assert figures.count == 2500 and figures.maximum == max(curve("loss", s, 2) for s in range(1000, 2500))


def test_downsampling_after_a_retry_uses_only_current_points(session: Session) -> None:
    """Attempt 2 resumes inside a block: that block is unpacked, the others read by their figures or tiles."""
    job = new_job(session)
    send(session, job, range(0, 4000), ["loss", "kl"])
    send(session, job, range(1000, 3000), ["loss", "kl"], attempt=2)
    assert_downsampled_like_the_points(session, job, ["loss", "kl"], 10)
    assert_downsampled_like_the_points(session, job, ["loss", "kl"], 100)
    assert_downsampled_like_the_points(session, job, ["loss", "kl"], 500)


def test_a_retried_job_whose_newer_attempt_sent_nothing_yet_shows_the_old_points(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 10), ["loss"])
    job.attempt = 2
    session.commit()
    assert latest_points(session, job.id, ["loss"])["loss"].step == 9


def test_history_pages_never_split_a_step_between_attempts(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 10), ["loss"])
    send(session, job, range(5, 10), ["loss"], attempt=2)
    first = metric_history(session, job.id, "loss", -1, 6)  # steps 0-4, then step 5 twice: stop before it
    assert [p.step for p in first] == [0, 1, 2, 3, 4]
    rest = metric_history(session, job.id, "loss", first[-1].step, 100)
    assert [(p.step, p.attempt) for p in rest][:2] == [(5, 1), (5, 2)] and len(first) + len(rest) == 15


def test_upgrade_packs_points_stored_one_row_each_and_downgrade_unpacks_them(database_url: str) -> None:
    upgrade(database_url)
    downgrade(database_url, "0005")
    rows = [
        {"job_id": 7, "key": "loss", "step": s, "attempt": a, "value": float(s % 7 + a), "wall_time": 5.0 + s,
         "superseded": a == 1 and s >= 300}
        for a, steps in ((1, range(0, 400)), (2, range(300, 600)))
        for s in steps
    ]  # fmt: skip
    engine = create_engine(database_url)
    with engine.begin() as conn:
        conn.execute(
            insert(Table("jobs", MetaData(), autoload_with=conn)),  # the table as it was at 0005
            [{"id": 7, "name": "old", "spec": {}, "status": "succeeded", "priority": 0, "algorithm": "flow_grpo",
              "executor": "native", "model_family": "sd3", "device_type": "cpu", "devices": 1, "nodes": 1,
              "attempt": 2, "max_attempts": 3, "cancel_requested": False, "step": 0, "total_steps": 0,
              "created_at": datetime(2026, 1, 1)}],
        )  # fmt: skip
        conn.execute(
            text("INSERT INTO metrics VALUES (:job_id, :key, :step, :attempt, :value, :wall_time, :superseded)"), rows
        )
    upgrade(database_url)
    with Session(engine) as session:
        packed = [(p.step, p.attempt, p.value, not p.current) for p in metric_history(session, 7, "loss", -1, 10_000)]
        assert packed == sorted((r["step"], r["attempt"], r["value"], r["superseded"]) for r in rows)
    downgrade(database_url, "0005")
    with engine.connect() as conn:
        back = conn.execute(
            text("SELECT step, attempt, value, wall_time, superseded FROM metrics ORDER BY step, attempt")
        )
        assert [tuple(r) for r in back] == sorted(
            (r["step"], r["attempt"], r["value"], r["wall_time"], r["superseded"]) for r in rows
        )
    engine.dispose()
    upgrade(database_url)


def test_latest_points_of_every_key_come_from_the_current_attempt(session: Session) -> None:
    job = new_job(session)
    send(session, job, range(0, 600), ["loss", "kl"])
    send(session, job, range(300, 400), ["loss"], attempt=2)  # kl's points from step 300 on are superseded too
    latest = latest_points(session, job.id)
    assert list(latest) == ["kl", "loss"]
    assert (latest["loss"].step, latest["loss"].value) == (399, curve("loss", 399, 2))
    assert (latest["kl"].step, latest["kl"].value) == (299, curve("kl", 299))
    assert latest_points(session, job.id, ["loss", "absent"]) == {"loss": latest["loss"]}


@pytest.mark.parametrize("after_step", [0, 699, 2999])
def test_a_read_after_a_step_is_the_rest_of_the_whole_read(session: Session, after_step: int) -> None:
    """What a live chart asks from its own last step: exactly the current points past it, on the same axis."""
    job = new_job(session)
    send(session, job, range(0, 3000), ["loss"])
    send(session, job, range(1000, 4000), ["loss"], attempt=2)  # resumed from a checkpoint at step 1000
    send(session, job, range(700, 4000, 2), ["kl"], attempt=2)
    whole = metric_series(session, job.id, ["loss", "kl"], 10_000).series
    rest = metric_series(session, job.id, ["loss", "kl"], 10_000, after_step).series
    for full, tail in zip(whole, rest, strict=True):
        kept = [i for i, s in enumerate(full.steps) if s > after_step]
        assert tail.steps == [full.steps[i] for i in kept] and tail.values == [full.values[i] for i in kept]
    assert metric_series(session, job.id, ["loss"], 10_000, 3999).series[0].steps == []
