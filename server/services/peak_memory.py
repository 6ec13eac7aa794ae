"""A job's peak memory: the largest `memory/peak_bytes` over its current points (steps a retry superseded are
left out). One figure for the jobs list, the job page, `sfumato show`, the compare answer and experiments."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy.orm import Session

from server.services.current_points import CurrentPoints, current_points_of_jobs
from server.services.metric_figures import KeyFigures, key_figures_of_jobs

MEMORY_KEY = "memory/peak_bytes"
DEFINITION = "the largest memory/peak_bytes the job reported (a retry's superseded steps left out); null before any"


def peak_memory_of(figures: dict[str, KeyFigures]) -> float | None:
    """The peak from a job's key figures, when they were read with MEMORY_KEY among others."""
    return figures[MEMORY_KEY].maximum if MEMORY_KEY in figures else None


def peak_memory_bytes(
    session: Session, job_ids: Sequence[int], currents: dict[int, CurrentPoints] | None = None
) -> dict[int, float | None]:
    """Each job's peak memory in bytes, for all the jobs in at most three statements (`currents`: the jobs'
    current_points, when already read)."""
    if not job_ids:
        return {}
    currents = currents if currents is not None else current_points_of_jobs(session, job_ids)
    figures = key_figures_of_jobs(session, job_ids, [MEMORY_KEY], currents)
    return {job_id: peak_memory_of(figures[job_id]) for job_id in job_ids}
