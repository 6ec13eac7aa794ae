"""Which stored points and samples are current when a job ran more than once.

A retried attempt resumes from a checkpoint and reports again from that step on. Every attempt's points
are kept, but an attempt's points stop counting at the first step any later attempt reported: the curve
shows what the surviving attempt computed and never doubles back. Live ranges of attempts are therefore
disjoint and ordered: a later attempt's current points lie above an earlier one's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Integer, and_, bindparam, case, text
from sqlalchemy.orm import Session

from server.services.sql_text import select_text

NEVER = 2**31 - 1  # a step no attempt reaches: "current to the end"


@dataclass(frozen=True)
class CurrentPoints:
    """Each attempt's cutoff: its points at steps ≥ cutoff were superseded by a later attempt."""

    firsts: dict[int, int] = field(default_factory=dict)  # attempt → the first step it reported

    @property
    def cutoffs(self) -> dict[int, int]:
        """The cutoff of every attempt that reported points and was superseded."""
        return {attempt: cut for attempt in self.firsts if (cut := self.cutoff(attempt)) < NEVER}

    def cutoff(self, attempt: int) -> int:
        """The earliest first step of a later attempt (also for an attempt that reported only samples)."""
        return min((first for later, first in self.firsts.items() if later > attempt), default=NEVER)

    def is_current(self, attempt: int, step: int) -> bool:
        return step < self.cutoff(attempt)

    def bound(self, attempt_column: Any) -> Any:
        """A SQL expression: the cutoff of the row's attempt (for `first_step < bound` and the like)."""
        cutoffs = self.cutoffs
        return case(cutoffs, value=attempt_column, else_=NEVER) if cutoffs else NEVER


_FIRST_STEPS = select_text(
    "SELECT attempt, first_step FROM metric_attempts WHERE job_id = :job_id", attempt=Integer, first_step=Integer
)


def current_points(session: Session, job_id: int) -> CurrentPoints:
    """The job's cutoffs, from its attempts' first steps (one row per attempt)."""
    return CurrentPoints({attempt: first for attempt, first in session.execute(_FIRST_STEPS, {"job_id": job_id})})


_FIRST_STEPS_OF_JOBS = select_text(
    "SELECT job_id, attempt, first_step FROM metric_attempts WHERE job_id IN :job_ids",
    job_id=Integer,
    attempt=Integer,
    first_step=Integer,
).bindparams(bindparam("job_ids", expanding=True))


def current_points_of_jobs(session: Session, job_ids: Sequence[int]) -> dict[int, CurrentPoints]:
    """Each job's cutoffs, as `current_points` reads them, for many jobs in one statement."""
    firsts: dict[int, dict[int, int]] = {job_id: {} for job_id in job_ids}
    if job_ids:
        for job_id, attempt, first in session.execute(_FIRST_STEPS_OF_JOBS, {"job_ids": list(job_ids)}):
            firsts[job_id][attempt] = first
    return {job_id: CurrentPoints(f) for job_id, f in firsts.items()}


def bound_of_jobs(currents: dict[int, CurrentPoints], job_column: Any, attempt_column: Any) -> Any:
    """`CurrentPoints.bound` over rows of many jobs: the cutoff of the row's job and attempt."""
    whens = [
        (and_(job_column == job_id, attempt_column == attempt), cut)
        for job_id, current in currents.items()
        for attempt, cut in current.cutoffs.items()
    ]
    return case(*whens, else_=NEVER) if whens else NEVER


# The same statement on PostgreSQL and SQLite, built once.
_RECORD_FIRST_STEP = text(
    "INSERT INTO metric_attempts (job_id, attempt, first_step) VALUES (:job_id, :attempt, :first_step) "
    "ON CONFLICT (job_id, attempt) DO UPDATE SET first_step = excluded.first_step "
    "WHERE excluded.first_step < metric_attempts.first_step"
)


def record_first_step(session: Session, job_id: int, attempt: int, first_step: int) -> None:
    """Lower the attempt's first step to `first_step` if that is earlier (or record it).

    The upsert locks the attempt's row, so two batches of one attempt are stored one after the other; on
    SQLite it also takes the write lock before ingestion reads anything.
    """
    session.execute(_RECORD_FIRST_STEP, {"job_id": job_id, "attempt": attempt, "first_step": first_step})
