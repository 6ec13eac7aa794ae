"""Per-key figures over a job's current points (count, mean, maximum, first and last wall time): the compare
page's and the job pages' summary numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import MetricBlock
from server.services.current_points import current_points
from server.services.metric_blocks import pack
from server.services.metric_reads import current_points_of_block


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
        figures = pack([current_points_of_block(data, attempt, current)]).figures
        part = {name: column[0] for name, column in figures.items()}
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
