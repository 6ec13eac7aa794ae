"""Reading a job's metrics: keys, downsampled step-aligned series, latest values, live appends, figures.

Everything reads `metric_blocks`. Long ranges use only the blocks' figures (a 1,000,000-point series is
~4,000 rows, none unpacked); short ranges and live appends unpack the few blocks they cover. Points an
attempt reported after a later attempt resumed are left out (services.current_points).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from sqlalchemy import func, select, text, tuple_, union_all
from sqlalchemy.orm import Session

from server.models import METRIC_BLOCK_STEPS as BLOCK
from server.models import MetricBlock
from server.schemas.metrics import HistoryPoint, MetricSeries, MetricSeriesSet
from server.services.current_points import CurrentPoints, current_points
from server.services.downsampling import Bucketed, Pieces, bucket
from server.services.metric_blocks import POINT, figures, unpack

_NEXT_KEYS = text(
    "WITH RECURSIVE k(key) AS ("
    " SELECT min(key) FROM metric_blocks WHERE job_id = :job_id"
    " UNION ALL"
    " SELECT (SELECT min(key) FROM metric_blocks WHERE job_id = :job_id AND key > k.key) FROM k WHERE k.key IS NOT NULL"
    ") SELECT key FROM k"
)


def metric_keys(session: Session, job_id: int) -> list[str]:
    """The job's keys, sorted: a loose index scan (one primary-key probe per key)."""
    return [key for key in session.execute(_NEXT_KEYS, {"job_id": job_id}).scalars() if key is not None]


def _current(job_id: int, keys: Sequence[str], current: CurrentPoints) -> tuple[object, ...]:
    """Blocks of these keys holding at least one current point."""
    return (
        MetricBlock.job_id == job_id,
        MetricBlock.key.in_(keys),
        MetricBlock.first_step < current.bound(MetricBlock.attempt),
    )


def _current_points(data: bytes, attempt: int, current: CurrentPoints) -> np.ndarray:
    points = unpack(data)
    cutoff = current.cutoff(attempt)
    return points if points["step"][-1] < cutoff else points[points["step"] < cutoff]


def metric_series(session: Session, job_id: int, keys: list[str], max_points: int) -> MetricSeriesSet:
    """Series for `keys` on one shared step axis of at most `max_points` steps.

    Past `max_points` steps the range is cut into equal buckets (the same edges for every key; whole blocks
    once a bucket spans one) and each bucket gives, per key, its last value, minimum and maximum.
    """
    current = current_points(session, job_id)
    where = _current(job_id, keys, current)
    rows = session.execute(
        select(
            MetricBlock.key,
            MetricBlock.attempt,
            MetricBlock.block,
            MetricBlock.first_step,
            MetricBlock.last_step,
            MetricBlock.last_value,
            MetricBlock.last_wall,
            MetricBlock.min_value,
            MetricBlock.max_value,
        ).where(*where)
    ).all()
    if not rows:
        return MetricSeriesSet(series=[MetricSeries(key=key, steps=[], values=[], wall_times=[]) for key in keys])
    index = {key: i for i, key in enumerate(keys)}
    lo = min(row.first_step for row in rows)
    hi = max(min(row.last_step, current.cutoff(row.attempt) - 1) for row in rows)
    width = -(-(hi - lo + 1) // max_points)
    if width < BLOCK:
        base = lo
        whole: list = []
        unpacked = rows
    else:
        width = -(-width // BLOCK) * BLOCK
        base = lo // BLOCK * BLOCK
        whole = [row for row in rows if row.last_step < current.cutoff(row.attempt)]
        unpacked = [row for row in rows if row.last_step >= current.cutoff(row.attempt)]
    parts = [_piece_of_blocks(whole, index, base, width)] if whole else []
    if unpacked:
        parts.append(_pieces_of_points(session, where, unpacked, index, current, base, width))
    bucketed = bucket(_concat(parts), len(keys))
    return _series_set(keys, bucketed, width)


def _piece_of_blocks(rows: list, index: dict[str, int], base: int, width: int) -> Pieces:
    key, _attempt, block, _first, last_step, last_value, last_wall, low, high = (
        np.array(c) for c in zip(*rows, strict=True)
    )
    return Pieces(
        key=np.array([index[k] for k in key]),
        bucket=(block * BLOCK - base) // width,
        last_step=last_step,
        last_value=last_value,
        last_wall=last_wall,
        min_value=low,
        max_value=high,
    )


def _pieces_of_points(
    session: Session,
    where: tuple[object, ...],
    rows: list,
    index: dict[str, int],
    current: CurrentPoints,
    base: int,
    width: int,
) -> Pieces:
    """The points of `rows`' blocks, current ones only, as pieces: all blocks `where` selects when `rows`
    are all of them, otherwise just those (a few blocks a later attempt cut short)."""
    wanted = {(row.key, row.attempt, row.block) for row in rows}
    columns = (MetricBlock.key, MetricBlock.attempt, MetricBlock.block, MetricBlock.points)
    narrow = (
        (tuple_(MetricBlock.key, MetricBlock.attempt, MetricBlock.block).in_(list(wanted)),)
        if len(wanted) <= 64
        else ()
    )
    arrays, owners = [], []
    for key, attempt, block, data in session.execute(select(*columns).where(*where, *narrow)):
        if (key, attempt, block) in wanted:
            points = _current_points(data, attempt, current)
            arrays.append(points)
            owners.append(np.full(len(points), index[key]))
    points = np.concatenate(arrays) if arrays else np.empty(0, dtype=POINT)
    key = np.concatenate(owners) if owners else np.empty(0, dtype=int)
    return Pieces.of_points(key, (points["step"] - base) // width, points["step"], points["value"], points["wall"])


def _concat(parts: list[Pieces]) -> Pieces:
    if len(parts) == 1:
        return parts[0]
    fields = Pieces.__dataclass_fields__
    return Pieces(**{name: np.concatenate([getattr(p, name) for p in parts]) for name in fields})


def _listed(values: np.ndarray) -> list[float | None]:
    return np.where(np.isnan(values), None, values).tolist()


def _series_set(keys: list[str], b: Bucketed, width: int) -> MetricSeriesSet:
    steps = b.steps.tolist()
    series = []
    for i, key in enumerate(keys):
        series.append(
            MetricSeries(
                key=key,
                steps=steps,
                values=_listed(b.last[i]),
                wall_times=_listed(b.wall[i]),
                minimum=_listed(b.low[i]) if width > 1 else None,
                maximum=_listed(b.high[i]) if width > 1 else None,
            )
        )
    return MetricSeriesSet(series=series, bucket_steps=width)


@dataclass
class Point:
    step: int
    value: float
    wall_time: float


def latest_points(session: Session, job_id: int, keys: Sequence[str]) -> dict[str, Point]:
    """The last current point of each key: one statement, a backward primary-key probe per key."""
    if not keys:
        return {}
    current = current_points(session, job_id)
    probes = [
        select(
            MetricBlock.key, MetricBlock.attempt, MetricBlock.last_step, MetricBlock.last_value, MetricBlock.last_wall
        )
        .where(*_current(job_id, [key], current))
        .order_by(MetricBlock.block.desc(), MetricBlock.attempt.desc())
        .limit(1)
        .subquery()
        for key in keys
    ]
    found: dict[str, Point] = {}
    for row in session.execute(union_all(*(select(p) for p in probes))):
        key, attempt, step, value, wall = row
        if step < current.cutoff(attempt):
            found[key] = Point(step, value, wall)
            continue
        data = session.scalar(
            select(MetricBlock.points).where(
                MetricBlock.job_id == job_id,
                MetricBlock.key == key,
                MetricBlock.attempt == attempt,
                MetricBlock.block == step // BLOCK,
            )
        )
        last = _current_points(data, attempt, current)[-1]
        found[key] = Point(int(last["step"]), float(last["value"]), float(last["wall"]))
    return {key: found[key] for key in keys if key in found}


def points_after(
    session: Session, job_id: int, keys: Sequence[str], after_step: int, limit: int
) -> dict[str, list[Point]]:
    """Current points with step > after_step, per key, at most `limit` each: the live chart appends."""
    current = current_points(session, job_id)
    out: dict[str, list[Point]] = {}
    for key in keys:
        blocks = session.execute(
            select(MetricBlock.attempt, MetricBlock.points)
            .where(*_current(job_id, [key], current), MetricBlock.last_step > after_step)
            .order_by(MetricBlock.block, MetricBlock.attempt)
            .limit(limit)
        )
        points: list[Point] = []
        for attempt, data in blocks:
            block = _current_points(data, attempt, current)
            block = block[block["step"] > after_step][: limit - len(points)]
            points += [Point(int(s), float(v), float(w)) for s, v, w in block.tolist()]
            if len(points) >= limit:
                break
        out[key] = points
    return out


@dataclass
class KeyFigures:
    """One key's figures over all its current points."""

    count: int
    mean: float
    maximum: float
    first_wall: float
    last_wall: float


def key_figures(session: Session, job_id: int, keys: Sequence[str] | None = None) -> dict[str, KeyFigures]:
    """Count, mean, maximum and first / last wall time per key (of `keys`, or all): an aggregate over the
    blocks' figures, plus the blocks a later attempt cut short, unpacked."""
    current = current_points(session, job_id)
    bound = current.bound(MetricBlock.attempt)
    where = [MetricBlock.job_id == job_id, MetricBlock.first_step < bound]
    if keys is not None:
        where.append(MetricBlock.key.in_(keys))
    sums: dict[str, list[float]] = {}
    whole = session.execute(
        select(
            MetricBlock.key,
            func.sum(MetricBlock.n),
            func.sum(MetricBlock.total),
            func.max(MetricBlock.max_value),
            func.min(MetricBlock.first_wall),
            func.max(MetricBlock.last_wall),
        )
        .where(*where, MetricBlock.last_step < bound)
        .group_by(MetricBlock.key)
    )
    for key, n, total, maximum, first, last in whole:
        sums[key] = [n, total, maximum, first, last]
    cut = session.execute(
        select(MetricBlock.key, MetricBlock.attempt, MetricBlock.points).where(*where, MetricBlock.last_step >= bound)
    )
    for key, attempt, data in cut:
        part = figures(_current_points(data, attempt, current))
        n, total, maximum, first, last = sums.get(key, [0, 0.0, -math.inf, math.inf, -math.inf])
        sums[key] = [
            n + part["n"],
            total + part["total"],
            max(maximum, part["max_value"]),
            min(first, part["first_wall"]),
            max(last, part["last_wall"]),
        ]
    return {
        key: KeyFigures(int(n), total / n, maximum, first, last)
        for key, (n, total, maximum, first, last) in sums.items()
        if n
    }


def metric_history(session: Session, job_id: int, key: str, after_step: int, limit: int) -> list[HistoryPoint]:
    """Points of `key` any attempt reported at steps > after_step, by step then attempt (the first `limit`),
    each saying whether it is current."""
    current = current_points(session, job_id)
    rows = session.execute(
        select(MetricBlock.attempt, MetricBlock.points)
        .where(MetricBlock.job_id == job_id, MetricBlock.key == key, MetricBlock.last_step > after_step)
        .order_by(MetricBlock.block, MetricBlock.attempt)
    )
    history: list[HistoryPoint] = []
    block_of_last = None
    for attempt, data in rows.yield_per(64):
        points = unpack(data)
        block = int(points["step"][0]) // BLOCK
        if len(history) >= limit and block != block_of_last:
            break
        block_of_last = block
        history += [
            HistoryPoint(
                step=step, attempt=attempt, value=value, wall_time=wall, current=current.is_current(attempt, step)
            )
            for step, value, wall in points[points["step"] > after_step].tolist()
        ]
    history.sort(key=lambda p: (p.step, p.attempt))
    if len(history) > limit:
        split = history[limit].step  # never end a page inside a step that two attempts reported
        whole = [p for p in history[:limit] if p.step != split]
        history = whole or history[:limit]
    return history
