"""Reads of `metric_blocks`, the per-16-step rollups that triggers keep beside `metrics` (migration 0003).

A chart over 50,000 steps downsampled to ~80 buckets per key needs each bucket's minimum, maximum and
last point. Reading them from the rollups touches 1/16 of the rows the points would, and needs no sort:
a bucket is a run of whole blocks. Blocks whose points were superseded (a later attempt re-ran their
steps) are dirty; `repair` recomputes them from `metrics` before anything reads them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, case, delete, func, select, update
from sqlalchemy.orm import Session

from server.models import METRIC_BLOCK_STEPS as BLOCK
from server.models import Metric, MetricBlock
from server.schemas.metrics import MetricSeries


@dataclass
class _Rollup:
    n: int = 0
    total: float = 0.0
    first: tuple[int, float] | None = None  # (step, wall)
    low: tuple[float, int] | None = None  # (value, step)
    high: tuple[float, int] | None = None  # (-value, step): min() gives the largest value, earliest step
    last: tuple[int, float, float] | None = None  # (step, value, wall)

    def add(self, step: int, value: float, wall: float) -> None:
        self.n += 1
        self.total += value
        self.first = min(self.first or (step, wall), (step, wall))
        self.low = min(self.low or (value, step), (value, step))
        self.high = min(self.high or (-value, step), (-value, step))
        self.last = max(self.last or (step, value, wall), (step, value, wall))


def repair(session: Session, job_id: int, keys: Sequence[str] | None = None) -> int:
    """Recompute the job's dirty blocks (of `keys`, or all) from its current points; returns how many.

    A block that took new points while this ran (its count moved) stays dirty for the next reader.
    """
    where = [MetricBlock.job_id == job_id, MetricBlock.dirty.is_(True)]
    if keys is not None:
        where.append(MetricBlock.key.in_(keys))
    dirty = {
        (key, block): n
        for key, block, n in session.execute(select(MetricBlock.key, MetricBlock.block, MetricBlock.n).where(*where))
    }
    if not dirty:
        return 0
    rollups: dict[tuple[str, int], _Rollup] = {kb: _Rollup() for kb in dirty}
    for key in {key for key, _block in dirty}:
        blocks = sorted(block for k, block in dirty if k == key)
        points = session.execute(
            select(Metric.step, Metric.value, Metric.wall_time).where(
                Metric.job_id == job_id,
                Metric.key == key,
                Metric.step.between(blocks[0] * BLOCK, blocks[-1] * BLOCK + BLOCK - 1),
                Metric.superseded.is_(False),
            )
        )
        for step, value, wall in points:
            rollup = rollups.get((key, step // BLOCK))
            if rollup is not None:
                rollup.add(step, value, wall)
    for (key, block), rollup in rollups.items():
        same = (
            MetricBlock.job_id == job_id,
            MetricBlock.key == key,
            MetricBlock.block == block,
            MetricBlock.dirty.is_(True),
            MetricBlock.n == dirty[(key, block)],
        )
        if rollup.n == 0 or rollup.first is None or rollup.low is None or rollup.high is None or rollup.last is None:
            session.execute(delete(MetricBlock).where(*same).execution_options(synchronize_session=False))
            continue
        session.execute(
            update(MetricBlock)
            .where(*same)
            .values(
                n=rollup.n,
                total=rollup.total,
                first_step=rollup.first[0],
                first_wall=rollup.first[1],
                min_step=rollup.low[1],
                min_value=rollup.low[0],
                max_step=rollup.high[1],
                max_value=-rollup.high[0],
                last_step=rollup.last[0],
                last_value=rollup.last[1],
                last_wall=rollup.last[2],
                dirty=False,
            )
            .execution_options(synchronize_session=False)
        )
    session.commit()
    return len(rollups)


def block_series(session: Session, job_id: int, keys: list[str], max_points: int) -> list[MetricSeries] | None:
    """metrics.metric_series from the rollups: the same buckets (edges rounded out to whole blocks, so there
    may be fewer), each keeping per key its minimum, maximum and last point, and every key's value at the
    union of those steps. None when the range is short enough to read the points themselves."""
    if not keys:
        return None
    repair(session, job_id, keys)
    mine = (MetricBlock.job_id == job_id, MetricBlock.key.in_(keys), MetricBlock.n > 0)
    lo, hi = session.execute(
        select(func.min(MetricBlock.first_step), func.max(MetricBlock.last_step)).where(*mine)
    ).one()
    if lo is None:
        return None
    buckets = max(1, max_points // (3 * len(keys)))
    width = -(-(hi - lo + 1) // buckets)
    if hi - lo + 1 <= max_points or width < BLOCK:
        return None
    width = -(-width // BLOCK) * BLOCK
    base = lo // BLOCK * BLOCK
    # Per (key, bucket): its minimum, maximum and last step from the blocks (hash aggregates and a hash join over
    # ~1/16 of the points' rows; no sort), the earliest step on a tie.
    bucket = ((MetricBlock.block * BLOCK - base) // width).label("bucket")
    blocks = (
        select(
            MetricBlock.key,
            bucket,
            MetricBlock.min_step,
            MetricBlock.min_value,
            MetricBlock.max_step,
            MetricBlock.max_value,
            MetricBlock.last_step,
        )
        .where(*mine)
        .cte("blocks")
    )
    edges = (
        select(
            blocks.c.key,
            blocks.c.bucket,
            func.min(blocks.c.min_value).label("low"),
            func.max(blocks.c.max_value).label("high"),
            func.max(blocks.c.last_step).label("last"),
        )
        .group_by(blocks.c.key, blocks.c.bucket)
        .cte("edges")
    )
    extremes = (
        select(
            func.min(case((blocks.c.min_value == edges.c.low, blocks.c.min_step))),
            func.min(case((blocks.c.max_value == edges.c.high, blocks.c.max_step))),
            func.max(edges.c.last),
        )
        .join_from(blocks, edges, and_(blocks.c.key == edges.c.key, blocks.c.bucket == edges.c.bucket))
        .group_by(edges.c.key, edges.c.bucket)
    )
    steps = {step for row in session.execute(extremes) for step in row if step is not None}
    kept = sorted(steps)
    position = {step: i for i, step in enumerate(kept)}
    values: dict[str, list[float | None]] = {key: [None] * len(kept) for key in keys}
    for chunk in range(0, len(kept), 5000):
        rows = session.execute(
            select(Metric.key, Metric.step, Metric.value).where(
                Metric.job_id == job_id,
                Metric.key.in_(keys),
                Metric.step.in_(kept[chunk : chunk + 5000]),
                Metric.superseded.is_(False),
            )
        )
        for key, step, value in rows:
            values[key][position[step]] = value
    return [MetricSeries(key=key, steps=kept, values=values[key]) for key in keys]


@dataclass
class KeyFigures:
    """One key's figures over all its current points."""

    count: int
    mean: float
    maximum: float
    first_wall: float
    last_wall: float


def key_figures(session: Session, job_id: int, keys: Sequence[str] | None = None) -> dict[str, KeyFigures]:
    """Count, mean, maximum and first / last wall time per key (of `keys`, or all), from the rollups."""
    repair(session, job_id, keys)
    where = [MetricBlock.job_id == job_id, MetricBlock.n > 0]
    if keys is not None:
        where.append(MetricBlock.key.in_(keys))
    rows = session.execute(
        select(
            MetricBlock.key,
            func.sum(MetricBlock.n),
            func.sum(MetricBlock.total),
            func.max(MetricBlock.max_value),
            func.min(MetricBlock.first_wall),
            func.max(MetricBlock.last_wall),
        )
        .where(*where)
        .group_by(MetricBlock.key)
    )
    return {
        key: KeyFigures(int(n), total / n, maximum, first, last)
        for key, n, total, maximum, first, last in rows
        if n and not math.isnan(total)
    }
