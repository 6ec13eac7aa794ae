"""A job's samples/s, defined once: every page, the CLI, the jobs list and the compare answer show this figure.

Samples/s is the median of the `throughput/samples_per_s` metric over the job's current steps, leaving out
each attempt's first WARMUP_STEPS reported steps (the first steps compile kernels and fill caches; a retried
attempt warms up again after it resumes). The median, not the mean, so that one step slowed by a checkpoint
or an eval pass does not move it. None until a step after the warm-up has reported.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sqlalchemy import Integer, bindparam, select
from sqlalchemy.orm import Session

from server.models import MetricBlock
from server.services.current_points import CurrentPoints
from server.services.metric_blocks import POINT, unpack
from server.services.sql_text import select_text

THROUGHPUT_KEY = "throughput/samples_per_s"
WARMUP_STEPS = 1
DEFINITION = (
    f"median of {THROUGHPUT_KEY} over the job's steps, leaving out each attempt's first "
    + ("step" if WARMUP_STEPS == 1 else f"{WARMUP_STEPS} steps")
    + " (warm-up)"
)

_FIRST_STEPS = select_text(
    "SELECT job_id, attempt, first_step FROM metric_attempts WHERE job_id IN :job_ids",
    job_id=Integer,
    attempt=Integer,
    first_step=Integer,
).bindparams(bindparam("job_ids", expanding=True))


def _currents(session: Session, job_ids: Sequence[int]) -> dict[int, CurrentPoints]:
    """Each job's cutoffs (services.current_points), for many jobs in one statement."""
    firsts: dict[int, dict[int, int]] = {job_id: {} for job_id in job_ids}
    for job_id, attempt, first in session.execute(_FIRST_STEPS, {"job_ids": list(job_ids)}):
        firsts[job_id][attempt] = first
    return {job_id: CurrentPoints(f) for job_id, f in firsts.items()}


def samples_per_s(session: Session, job_ids: Sequence[int]) -> dict[int, float | None]:
    """Each job's samples/s (see the module's docstring), for many jobs in two statements."""
    if not job_ids:
        return {}
    currents = _currents(session, job_ids)
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
