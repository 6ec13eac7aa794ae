"""The record of a job's attempts (`JobAttempt`): opened when the scheduler places the job, marked when its
trainer starts and each time the worker sees it running, closed with who ended it.

Why keep it: the platform's own restarts are told apart from retries after the job's own failures
(services.attempt_counts), a job's duration is the sum of the intervals in which its trainer was seen running,
so the time the platform was down is not in it (services.job_duration), and a reporter still running for an
attempt that is over is told "superseded" once rather than refused as an unknown token at every request
(services.auth.authenticate_job_token).
"""

from __future__ import annotations

from enum import StrEnum

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.models import Job, JobAttempt, utcnow


class AttemptEnd(StrEnum):
    """Who ended an attempt: the platform (a worker or host restarted, shut down or lost, a task the broker lost,
    a platform part unreachable: exit code 75), the job's own failure that a retry may cure (its trainer killed
    by SIGKILL, e.g. out of memory), or the job itself finishing (succeeded, failed, cancelled)."""

    PLATFORM = "platform"
    FAILURE = "failure"
    FINISHED = "finished"


def current_attempt(session: Session, job: Job) -> JobAttempt:
    """The row of the job's current attempt, made when missing (an attempt placed before the rows existed)."""
    row = session.scalar(select(JobAttempt).where(JobAttempt.job_id == job.id, JobAttempt.attempt == job.attempt))
    if row is None:
        row = JobAttempt(job_id=job.id, attempt=job.attempt)
        session.add(row)
    return row


def record_token(session: Session, job: Job, token_hash: str) -> None:
    """Node 0's job token of the current attempt, kept after the attempt ends (the job's own copy is cleared)."""
    current_attempt(session, job).token_hash = token_hash


def mark_started(session: Session, job: Job) -> None:
    """The job's trainer started (its status became running): the attempt runs from now."""
    row = current_attempt(session, job)
    now = utcnow()
    row.started_at = row.started_at or now
    row.last_seen_at = now


def mark_seen(session: Session, job_id: int, attempt: int) -> None:
    """The worker sees the attempt's trainer running (or just ended) now."""
    session.execute(
        update(JobAttempt)
        .where(
            JobAttempt.job_id == job_id,
            JobAttempt.attempt == attempt,
            JobAttempt.started_at.is_not(None),
            JobAttempt.ended_at.is_(None),
        )
        .values(last_seen_at=utcnow())
    )


def close_attempt(session: Session, job: Job, ended_by: AttemptEnd) -> None:
    """The job's current attempt is over (its status left scheduled/running); an attempt already closed stays as
    it was."""
    row = current_attempt(session, job)
    if row.ended_at is None:
        row.ended_at = utcnow()
        row.ended_by = ended_by
