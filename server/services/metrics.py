"""Metric points: idempotent batch ingestion and downsampled, step-aligned reads.

Storage: one row per (job, key, step, attempt), stored once. On PostgreSQL a batch none of whose points
exist yet (one primary-key probe says so) is COPied straight into `metrics`; a re-sent or overlapping
batch goes through a staging table and INSERT ... ON CONFLICT DO NOTHING, which stores nothing twice and
costs no more than the first send. When a later attempt reports a step, the earlier attempts' points
from that step on are marked superseded: the curve shows what the surviving attempt computed.

Reads: when a chart asks for more steps than `max_points`, the step range is cut into equal
buckets (the same edges for every key) and each bucket keeps, per key, its minimum, its
maximum and its last point. The union of those steps is returned for every key, so all
series share one step axis and no extreme is lost.
"""

from __future__ import annotations

import math
from typing import Any

import psycopg
from sqlalchemy import case, func, or_, select, text, update
from sqlalchemy.dialects import sqlite
from sqlalchemy.orm import Session

from server.models import Job, Metric
from server.schemas.metrics import MetricBatch, MetricSeries
from server.services.errors import Conflict, PayloadTooLarge
from server.services.metric_blocks import block_series

Row = tuple[int, str, int, int, float, float]  # job_id, key, step, attempt, value, wall_time

_COLUMNS = "(job_id, key, step, attempt, value, wall_time, superseded)"
_STAGING_DDL = (
    "CREATE TEMP TABLE IF NOT EXISTS metric_staging (job_id integer, key varchar(200), step integer, "
    "attempt integer, value double precision, wall_time double precision, superseded boolean) ON COMMIT DELETE ROWS"
)
_FROM_STAGING = (
    f"INSERT INTO metrics {_COLUMNS} SELECT job_id, key, step, attempt, value, wall_time, superseded "
    "FROM metric_staging ON CONFLICT DO NOTHING"
)
_ANY_STORED = "SELECT 1 FROM metrics WHERE job_id = %s AND key = %s AND step BETWEEN %s AND %s AND attempt = %s LIMIT 1"
_COPY_ESCAPES = str.maketrans({"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"})


def _insert_postgres(session: Session, rows: list[Row]) -> int:
    """New points straight into `metrics` by COPY when none of the batch is there yet; otherwise (a re-send,
    an overlap, or a concurrent writer of the same steps) COPY into a per-connection staging table and one
    INSERT ... ON CONFLICT DO NOTHING, whose row count is exactly the new points."""
    raw = session.connection().connection.driver_connection
    assert raw is not None  # a live psycopg connection inside this session's transaction
    job_id, key, _step, attempt, _value, _wall = rows[0]
    steps = [row[2] for row in rows if row[1] == key]
    data = _copy_text(rows)
    with raw.cursor() as cursor:
        cursor.execute(_ANY_STORED, (job_id, key, min(steps), max(steps), attempt))
        if cursor.fetchone() is None:
            cursor.execute("SAVEPOINT metric_copy")
            try:
                with cursor.copy(f"COPY metrics {_COLUMNS} FROM STDIN") as copy:
                    copy.write(data)
            except psycopg.errors.UniqueViolation:
                cursor.execute("ROLLBACK TO SAVEPOINT metric_copy")
            else:
                cursor.execute("RELEASE SAVEPOINT metric_copy")
                return len(rows)
        cursor.execute(_STAGING_DDL)
        with cursor.copy(f"COPY metric_staging {_COLUMNS} FROM STDIN") as copy:
            copy.write(data)
        cursor.execute(_FROM_STAGING)
        return int(cursor.rowcount)


def _copy_text(rows: list[Row]) -> str:
    """Rows in COPY's text format, formatted in one pass (about half the time of per-row write_row)."""
    keys: dict[str, str] = {}
    lines = []
    for job_id, key, step, attempt, value, wall in rows:
        escaped = keys.get(key)
        if escaped is None:
            escaped = keys[key] = key.translate(_COPY_ESCAPES)
        lines.append(f"{job_id}\t{escaped}\t{step}\t{attempt}\t{value!r}\t{wall!r}\tf\n")
    return "".join(lines)


def _insert_sqlite(session: Session, rows: list[Row]) -> int:
    """Multi-row INSERT ... ON CONFLICT DO NOTHING RETURNING: the returned rows are exactly the new points."""
    table = Metric.metadata.tables["metrics"]
    statement = sqlite.insert(table).on_conflict_do_nothing().returning(table.c.step)
    names = ("job_id", "key", "step", "attempt", "value", "wall_time")
    params = [{**dict(zip(names, row, strict=True)), "superseded": False} for row in rows]
    return len(session.connection().execute(statement, params).all())


def store_metric_batch(session: Session, job: Job, batch: MetricBatch, max_points: int) -> tuple[int, int]:
    """Store a trainer's batch; returns (points newly stored, non-finite points skipped). Commits."""
    if batch.point_count > max_points:
        raise PayloadTooLarge(f"batch has {batch.point_count} points; the limit is {max_points}")
    if batch.attempt > job.attempt:
        raise Conflict(f"attempt {batch.attempt} is newer than job {job.id}'s current attempt ({job.attempt})")
    rows: list[Row] = []
    skipped = 0
    for point in batch.steps:
        for key, value in point.values.items():
            if math.isfinite(value):
                rows.append((job.id, key, point.step, batch.attempt, value, point.wall_time))
            else:
                skipped += 1
    if rows and batch.attempt > 1:
        _supersede_from(session, job.id, batch.attempt, rows)
    stored = 0
    if rows:
        postgres = session.get_bind().dialect.name == "postgresql"
        stored = _insert_postgres(session, rows) if postgres else _insert_sqlite(session, rows)
    if rows and batch.attempt < job.attempt:
        _supersede_where_a_later_attempt_took_over(session, job.id, batch.attempt)
    session.commit()
    return stored, skipped


def _supersede_from(session: Session, job_id: int, attempt: int, rows: list[Row]) -> None:
    """Earlier attempts' points from the batch's first step on become superseded.

    Only the attempt's first batches have anything to do: once the attempt stored a point before this first
    step, the batch that carried it superseded everything from there (and late points of earlier attempts are
    superseded as they arrive). One backward primary-key probe tells, instead of a pass over the job's points.
    """
    first_step = min(row[2] for row in rows)
    key = rows[0][1]
    earlier = session.scalar(
        select(Metric.step)
        .where(Metric.job_id == job_id, Metric.key == key, Metric.step < first_step, Metric.attempt == attempt)
        .order_by(Metric.step.desc())
        .limit(1)
    )
    if earlier is not None:
        return
    session.execute(
        update(Metric)
        .where(
            Metric.job_id == job_id,
            Metric.attempt < attempt,
            Metric.step >= first_step,
            Metric.superseded.is_(False),
        )
        .values(superseded=True)
        .execution_options(synchronize_session=False)
    )


def _supersede_where_a_later_attempt_took_over(session: Session, job_id: int, attempt: int) -> None:
    """An earlier attempt's points arriving late (the next attempt's reporter ships what a killed trainer left
    in its spool) stay live only before the step where a later attempt resumed, so curves never double back."""
    resumed_at = session.scalar(select(func.min(Metric.step)).where(Metric.job_id == job_id, Metric.attempt > attempt))
    if resumed_at is None:
        return
    session.execute(
        update(Metric)
        .where(
            Metric.job_id == job_id,
            Metric.attempt == attempt,
            Metric.step >= resumed_at,
            Metric.superseded.is_(False),
        )
        .values(superseded=True)
        .execution_options(synchronize_session=False)
    )


def metric_keys(session: Session, job_id: int) -> list[str]:
    """The job's keys, sorted: a loose index scan (one primary-key probe per key), not a DISTINCT over every point."""
    keys = session.execute(_NEXT_KEYS, {"job_id": job_id}).scalars()
    return [key for key in keys if key is not None]


_NEXT_KEYS = text(
    "WITH RECURSIVE k(key) AS ("
    " SELECT min(key) FROM metrics WHERE job_id = :job_id"
    " UNION ALL"
    " SELECT (SELECT min(key) FROM metrics WHERE job_id = :job_id AND key > k.key) FROM k WHERE k.key IS NOT NULL"
    ") SELECT key FROM k"
)


def metric_series(session: Session, job_id: int, keys: list[str], max_points: int) -> list[MetricSeries]:
    """Series for `keys` on one shared step axis of at most max(max_points, 3 * len(keys)) steps.

    Long ranges are read from the per-16-step rollups (services.metric_blocks), with the same buckets.
    """
    from_blocks = block_series(session, job_id, keys, max_points)
    if from_blocks is not None:
        return from_blocks
    live = (Metric.job_id == job_id, Metric.key.in_(keys), Metric.superseded.is_(False))
    lo, hi = session.execute(select(func.min(Metric.step), func.max(Metric.step)).where(*live)).one()
    if lo is None:
        return [MetricSeries(key=key, steps=[], values=[]) for key in keys]
    if hi - lo + 1 > max_points:
        rows = session.execute(_bucket_extremes(live, keys, lo, hi, max_points)).all()
    else:
        rows = session.execute(select(Metric.key, Metric.step, Metric.value).where(*live)).all()

    steps = sorted({step for _key, step, _value in rows})
    position = {step: i for i, step in enumerate(steps)}
    values: dict[str, list[float | None]] = {key: [None] * len(steps) for key in keys}
    for key, step, value in rows:
        values[key][position[step]] = value
    return [MetricSeries(key=key, steps=steps, values=values[key]) for key in keys]


def _bucket_extremes(live: tuple[Any, ...], keys: list[str], lo: int, hi: int, max_points: int) -> Any:
    """(key, step, value) at every step that holds, for some key and bucket, the minimum, the maximum or the last point.

    One scan with window functions (no self-join, no IN-subquery that a planner may re-run per row).
    """
    buckets = max(1, max_points // (3 * len(keys)))
    width = -(-(hi - lo + 1) // buckets)  # ceil: `buckets` equal bucket edges cover [lo, hi]
    partition = (Metric.key, (Metric.step - lo) // width)
    ranked = (
        select(
            Metric.key,
            Metric.step,
            Metric.value,
            func.row_number().over(partition_by=partition, order_by=(Metric.value.asc(), Metric.step)).label("rmin"),
            func.row_number().over(partition_by=partition, order_by=(Metric.value.desc(), Metric.step)).label("rmax"),
            func.row_number().over(partition_by=partition, order_by=Metric.step.desc()).label("rlast"),
        )
        .where(*live)
        .subquery()
    )
    extreme = case((or_(ranked.c.rmin == 1, ranked.c.rmax == 1, ranked.c.rlast == 1), 1), else_=0)
    marked = select(
        ranked.c.key,
        ranked.c.step,
        ranked.c.value,
        func.max(extreme).over(partition_by=ranked.c.step).label("kept"),
    ).subquery()
    return select(marked.c.key, marked.c.step, marked.c.value).where(marked.c.kept == 1)
