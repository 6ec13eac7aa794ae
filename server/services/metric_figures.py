"""Per-key figures over each job's current points (count, mean, maximum, first and last wall time): the compare
page's and the job pages' summary numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import MetricBlock
from server.services.current_points import CurrentPoints, bound_of_jobs, current_points
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
    """Count, mean, maximum and first / last wall time per key (of `keys`, or all): `key_figures_of_jobs` of one."""
    return key_figures_of_jobs(session, [job_id], keys, {job_id: current_points(session, job_id)})[job_id]


def key_figures_of_jobs(
    session: Session, job_ids: Sequence[int], keys: Sequence[str] | None, currents: dict[int, CurrentPoints]
) -> dict[int, dict[str, KeyFigures]]:
    """Per job, count, mean, maximum and first / last wall time per key (of `keys`, or all): an aggregate over
    the blocks' figures, plus the blocks a later attempt cut short, unpacked; at most two statements for all
    the jobs. `currents`: every job's current_points."""
    if not job_ids:
        return {}
    bound = bound_of_jobs(currents, MetricBlock.job_id, MetricBlock.attempt)
    where = [MetricBlock.job_id.in_(job_ids), MetricBlock.first_step < bound]
    if keys is not None:
        where.append(MetricBlock.key.in_(keys))
    sums: dict[tuple[int, str], list[float]] = {}
    whole = session.execute(
        select(
            MetricBlock.job_id,
            MetricBlock.key,
            func.sum(MetricBlock.n),
            func.sum(MetricBlock.total),
            func.max(MetricBlock.max_value),
            func.min(MetricBlock.first_wall),
            func.max(MetricBlock.last_wall),
        )
        .where(*where, MetricBlock.last_step < bound)
        .group_by(MetricBlock.job_id, MetricBlock.key)
    )
    for job_id, key, n, total, maximum, first, last in whole:
        sums[(job_id, key)] = [n, total, maximum, first, last]
    if any(current.cutoffs for current in currents.values()):
        cut = session.execute(
            select(MetricBlock.job_id, MetricBlock.key, MetricBlock.attempt, MetricBlock.points).where(
                *where, MetricBlock.last_step >= bound
            )
        )
        for job_id, key, attempt, data in cut:
            figures = pack([current_points_of_block(data, attempt, currents[job_id])]).figures
            part = {name: column[0] for name, column in figures.items()}
            n, total, maximum, first, last = sums.get((job_id, key), [0, 0.0, -math.inf, math.inf, -math.inf])
            sums[(job_id, key)] = [
                n + part["n"],
                total + part["total"],
                max(maximum, part["max_value"]),
                min(first, part["first_wall"]),
                max(last, part["last_wall"]),
            ]
    out: dict[int, dict[str, KeyFigures]] = {job_id: {} for job_id in job_ids}
    for (job_id, key), (n, total, maximum, first, last) in sorted(sums.items()):
        if n:
            out[job_id][key] = KeyFigures(int(n), total / n, maximum, first, last)
    return out
