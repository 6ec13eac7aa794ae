"""Metric points: idempotent batch ingestion and downsampled, step-aligned reads.

Storage: one row per (job, key, step, attempt), inserted with ON CONFLICT DO NOTHING so a
re-sent batch costs one round of inserts and stores nothing twice. When a later attempt
reports a step, the earlier attempts' points from that step on are marked superseded: the
curve shows what the surviving attempt computed.

Reads: when a chart asks for more steps than `max_points`, the step range is cut into equal
buckets (the same edges for every key) and each bucket keeps, per key, its minimum, its
maximum and its last point. The union of those steps is returned for every key, so all
series share one step axis and no extreme is lost.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import Insert, func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from server.models import Job, Metric
from server.schemas.metrics import MetricBatch, MetricSeries
from server.services.errors import Conflict, PayloadTooLarge

# Rows per INSERT: 7 columns stay far below SQLite's and PostgreSQL's bound-parameter limits.
INSERT_CHUNK = 2000


def _insert_ignoring_duplicates(session: Session) -> Insert:
    dialect = session.get_bind().dialect.name
    module: Any = postgresql if dialect == "postgresql" else sqlite
    return module.insert(Metric.__table__).on_conflict_do_nothing()  # type: ignore[no-any-return]


def store_metric_batch(session: Session, job: Job, batch: MetricBatch, max_points: int) -> tuple[int, int]:
    """Store a trainer's batch; returns (points newly stored, non-finite points skipped). Commits."""
    if batch.point_count > max_points:
        raise PayloadTooLarge(f"batch has {batch.point_count} points; the limit is {max_points}")
    if batch.attempt != job.attempt:
        raise Conflict(f"attempt {batch.attempt} is not job {job.id}'s current attempt ({job.attempt})")
    rows = []
    skipped = 0
    for point in batch.steps:
        for key, value in point.values.items():
            if not math.isfinite(value):
                skipped += 1
                continue
            rows.append(
                {
                    "job_id": job.id,
                    "key": key,
                    "step": point.step,
                    "attempt": batch.attempt,
                    "value": value,
                    "wall_time": point.wall_time,
                    "superseded": False,
                }
            )
    if rows and batch.attempt > 1:
        first_step = min(row["step"] for row in rows)
        session.execute(
            update(Metric)
            .where(
                Metric.job_id == job.id,
                Metric.attempt < batch.attempt,
                Metric.step >= first_step,
                Metric.superseded.is_(False),
            )
            .values(superseded=True)
            .execution_options(synchronize_session=False)
        )
    stored = 0
    statement = _insert_ignoring_duplicates(session)
    for start in range(0, len(rows), INSERT_CHUNK):
        result = session.execute(statement.values(rows[start : start + INSERT_CHUNK]))
        stored += result.rowcount  # type: ignore[attr-defined]
    session.commit()
    return stored, skipped


def metric_keys(session: Session, job_id: int) -> list[str]:
    return list(session.scalars(select(Metric.key).where(Metric.job_id == job_id).distinct().order_by(Metric.key)))


def metric_series(session: Session, job_id: int, keys: list[str], max_points: int) -> list[MetricSeries]:
    """Series for `keys` on one shared step axis of at most max(max_points, 3 * len(keys)) steps."""
    live = (Metric.job_id == job_id, Metric.key.in_(keys), Metric.superseded.is_(False))
    lo, hi = session.execute(select(func.min(Metric.step), func.max(Metric.step)).where(*live)).one()
    if lo is None:
        return [MetricSeries(key=key, steps=[], values=[]) for key in keys]
    query = select(Metric.key, Metric.step, Metric.value).where(*live)
    if hi - lo + 1 > max_points:
        query = query.where(Metric.step.in_(_extreme_steps(job_id, keys, lo, hi, max_points)))
    rows = session.execute(query).all()

    steps = sorted({step for _key, step, _value in rows})
    position = {step: i for i, step in enumerate(steps)}
    values: dict[str, list[float | None]] = {key: [None] * len(steps) for key in keys}
    for key, step, value in rows:
        values[key][position[step]] = value
    return [MetricSeries(key=key, steps=steps, values=values[key]) for key in keys]


def _extreme_steps(job_id: int, keys: list[str], lo: int, hi: int, max_points: int) -> Any:
    """The steps holding, per bucket and key, the minimum, the maximum and the last point."""
    buckets = max(1, max_points // (3 * len(keys)))
    width = -(-(hi - lo + 1) // buckets)  # ceil: `buckets` equal bucket edges cover [lo, hi]
    bucket = (Metric.step - lo) // width
    partition = (Metric.key, bucket)
    ranked = (
        select(
            Metric.step,
            func.row_number().over(partition_by=partition, order_by=(Metric.value.asc(), Metric.step)).label("rmin"),
            func.row_number().over(partition_by=partition, order_by=(Metric.value.desc(), Metric.step)).label("rmax"),
            func.row_number().over(partition_by=partition, order_by=Metric.step.desc()).label("rlast"),
        )
        .where(Metric.job_id == job_id, Metric.key.in_(keys), Metric.superseded.is_(False))
        .subquery()
    )
    return select(ranked.c.step).where(or_(ranked.c.rmin == 1, ranked.c.rmax == 1, ranked.c.rlast == 1))
