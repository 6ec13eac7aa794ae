"""A job's samples/s, defined once: every page, the CLI, the jobs list and the compare answer show this figure.

Samples/s is the median of the `throughput/samples_per_s` metric over the job's current steps, leaving out
each attempt's first WARMUP_STEPS reported steps (the first steps compile kernels and fill caches; a retried
attempt warms up again after it resumes). The median, not the mean, so that one step slowed by a checkpoint
or an eval pass does not move it. None until a step after the warm-up has reported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import MetricBlock
from server.services.current_points import CurrentPoints, current_points_of_jobs
from server.services.metric_blocks import POINT, unpack

THROUGHPUT_KEY = "throughput/samples_per_s"
WARMUP_STEPS = 1
DEFINITION = (
    f"median of {THROUGHPUT_KEY} over the job's steps, leaving out each attempt's first "
    + ("step" if WARMUP_STEPS == 1 else f"{WARMUP_STEPS} steps")
    + " (warm-up)"
)

# Each job's figure with the signature of the points it came from, per database: a stored point never changes
# (ingestion keeps the first value of a step), so an unchanged signature means an unchanged figure. The jobs
# list asks for every listed job at each poll; finished jobs are then never read again.
_CACHE: dict[tuple[str, int], tuple[tuple[object, ...], float | None]] = {}
_CACHE_SIZE = 10_000


def _signatures(session: Session, job_ids: Sequence[int], currents: dict[int, CurrentPoints]) -> dict[int, tuple]:
    """Per job: its throughput blocks' count, points, last step and last attempt, and its attempts' cutoffs."""
    rows = session.execute(
        select(
            MetricBlock.job_id,
            func.count(),
            func.sum(MetricBlock.n),
            func.max(MetricBlock.last_step),
            func.max(MetricBlock.attempt),
        )
        .where(MetricBlock.job_id.in_(job_ids), MetricBlock.key == THROUGHPUT_KEY)
        .group_by(MetricBlock.job_id)
    )
    return {job_id: (*figures, tuple(sorted(currents[job_id].firsts.items()))) for job_id, *figures in rows}


def _median(session: Session, job_ids: Sequence[int], currents: dict[int, CurrentPoints]) -> dict[int, float | None]:
    rows = session.execute(
        select(MetricBlock.job_id, MetricBlock.attempt, MetricBlock.points)
        .where(MetricBlock.job_id.in_(job_ids), MetricBlock.key == THROUGHPUT_KEY)
        .order_by(MetricBlock.job_id, MetricBlock.attempt, MetricBlock.block)
    )
    by_attempt: dict[tuple[int, int], list[np.ndarray]] = {}
    for job_id, attempt, data in rows:
        by_attempt.setdefault((job_id, attempt), []).append(unpack(data))
    kept: dict[int, list[np.ndarray]] = {}
    for (job_id, attempt), blocks in by_attempt.items():
        points = np.concatenate(blocks) if len(blocks) > 1 else blocks[0]
        points = points[points["step"] < currents[job_id].cutoff(attempt)]
        kept.setdefault(job_id, []).append(points["value"][WARMUP_STEPS:])
    out: dict[int, float | None] = dict.fromkeys(job_ids)
    for job_id, parts in kept.items():
        values = np.concatenate(parts) if parts else np.empty(0, dtype=POINT["value"])
        values = values[np.isfinite(values)]
        out[job_id] = float(np.median(values)) if len(values) else None
    return out


def samples_per_s(
    session: Session, job_ids: Sequence[int], currents: dict[int, CurrentPoints] | None = None
) -> dict[int, float | None]:
    """Each job's samples/s (see the module's docstring): the points are read only for jobs whose throughput
    changed since this process last computed it. `currents`: the jobs' current_points, when already read."""
    if not job_ids:
        return {}
    currents = currents if currents is not None else current_points_of_jobs(session, job_ids)
    signatures = _signatures(session, job_ids, currents)
    database = str(session.get_bind().url)
    out: dict[int, float | None] = dict.fromkeys(job_ids)
    stale = []
    for job_id, signature in signatures.items():
        cached = _CACHE.get((database, job_id))
        if cached is not None and cached[0] == signature:
            out[job_id] = cached[1]
        else:
            stale.append(job_id)
    if stale:
        for job_id, value in _median(session, stale, currents).items():
            out[job_id] = value
            _CACHE[(database, job_id)] = (signatures[job_id], value)
        while len(_CACHE) > _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
    return out
