"""How a job came to its attempt number: retries after the job's own failures, counted apart from the times the
platform restarted it, each against its own limit (`retry.max_attempts`, `retry.max_platform_restarts`).

A job's attempt number counts every placement, so after two restarts of the platform and one retry after an
out-of-memory kill it is 4: "attempt 4 · 1 retry after failure (max 2) · 2 restarts of the platform (max 10)".
The counts are of the job's current run: a user's retry of a finished job starts a new run with fresh limits.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import JobAttempt
from server.services.job_attempts import AttemptEnd


@dataclass(frozen=True)
class AttemptCounts:
    attempt: int
    retries_after_failure: int
    max_retries_after_failure: int  # retry.max_attempts - 1: the first attempt is not a retry
    platform_restarts: int
    max_platform_restarts: int

    @property
    def summary(self) -> str:
        """The one phrasing every face shows."""
        if self.attempt == 0:
            return "not placed yet"
        retries = "retry" if self.retries_after_failure == 1 else "retries"
        restarts = "restart" if self.platform_restarts == 1 else "restarts"
        return (
            f"attempt {self.attempt} · {self.retries_after_failure} {retries} after failure "
            f"(max {self.max_retries_after_failure}) · {self.platform_restarts} {restarts} of the platform "
            f"(max {self.max_platform_restarts})"
        )


@dataclass(frozen=True)
class JobLimits:
    """What the counts of one job need from its row."""

    job_id: int
    attempt: int
    max_attempts: int
    max_platform_restarts: int


def count_ends(attempt: int, ends: Iterable[tuple[int, str | None]]) -> tuple[int, int]:
    """(retries after failure, platform restarts) of the current run, from (attempt, ended_by) of every ended
    attempt of the job: the ends after the last attempt before `attempt` that finished (a user retried it)."""
    ended = sorted(ends)
    run_start = max((a for a, by in ended if by == AttemptEnd.FINISHED and a < attempt), default=0)
    in_run = [by for a, by in ended if a > run_start]
    return in_run.count(AttemptEnd.FAILURE), in_run.count(AttemptEnd.PLATFORM)


def attempt_counts(session: Session, jobs: Sequence[JobLimits]) -> dict[int, AttemptCounts]:
    """The counts of each job, in one statement whatever the number of jobs."""
    ends: dict[int, list[tuple[int, str | None]]] = {job.job_id: [] for job in jobs}
    if jobs:
        rows = session.execute(
            select(JobAttempt.job_id, JobAttempt.attempt, JobAttempt.ended_by).where(
                JobAttempt.job_id.in_(list(ends)), JobAttempt.ended_by.is_not(None)
            )
        )
        for job_id, attempt, ended_by in rows:
            ends[job_id].append((attempt, ended_by))
    counts = {}
    for job in jobs:
        failures, restarts = count_ends(job.attempt, ends[job.job_id])
        counts[job.job_id] = AttemptCounts(
            attempt=job.attempt,
            retries_after_failure=failures,
            max_retries_after_failure=job.max_attempts - 1,
            platform_restarts=restarts,
            max_platform_restarts=job.max_platform_restarts,
        )
    return counts
