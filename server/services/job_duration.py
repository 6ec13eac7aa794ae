"""A job's duration, the one definition every face shows (job page, jobs list, compare, CLI): the sum of the
intervals in which its trainer ran.

An attempt ran from its trainer's start to the last moment the platform saw it running: the worker looks every
second and at the trainer's exit (services.job_attempts). An attempt the platform ended only after coming back
(a worker restarted, a host found lost) counts up to that last sight, so the time the platform was down, the time
in the queue between attempts and the time waiting for devices are not in it. An attempt still running counts to
now.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import JobAttempt

DEFINITION = (
    "the sum of the intervals in which the job's trainer ran: each attempt from its start to the last moment the "
    "platform saw it running (to now while it runs), so time in the queue and time the platform was down are "
    "not counted"
)


@dataclass(frozen=True)
class RunInterval:
    """One attempt's times, as stored."""

    started_at: datetime | None
    last_seen_at: datetime | None
    ended_at: datetime | None


def _aware(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value


def ran_for(intervals: Iterable[RunInterval], now: datetime) -> float | None:
    """Seconds the trainer ran over these attempts; None when none of them started."""
    total: float | None = None
    for interval in intervals:
        if interval.started_at is None:
            continue
        start = _aware(interval.started_at)
        if interval.ended_at is None:
            end = _aware(now)
        else:
            end = _aware(interval.last_seen_at) if interval.last_seen_at is not None else start
        total = (total or 0.0) + max(0.0, (end - start).total_seconds())
    return total


def ran_until(intervals: Iterable[RunInterval], moment: datetime, now: datetime) -> float:
    """Seconds the trainer had run by `moment`: `ran_for` counted up to that moment (how far into its own running
    time a job was when it reported a point)."""
    cut = _aware(moment)
    clipped = []
    for interval in intervals:
        if interval.started_at is None or _aware(interval.started_at) > cut:
            continue
        end = _aware(now) if interval.ended_at is None else _aware(interval.last_seen_at or interval.started_at)
        clipped.append(RunInterval(interval.started_at, min(end, cut), min(end, cut)))
    return ran_for(clipped, now) or 0.0


def intervals_of_jobs(session: Session, job_ids: Sequence[int]) -> dict[int, list[RunInterval]]:
    """Each job's attempts that started, in one statement whatever the number of jobs."""
    intervals: dict[int, list[RunInterval]] = {job_id: [] for job_id in job_ids}
    if job_ids:
        rows = session.execute(
            select(JobAttempt.job_id, JobAttempt.started_at, JobAttempt.last_seen_at, JobAttempt.ended_at).where(
                JobAttempt.job_id.in_(list(intervals)), JobAttempt.started_at.is_not(None)
            )
        )
        for job_id, started_at, last_seen_at, ended_at in rows:
            intervals[job_id].append(RunInterval(started_at, last_seen_at, ended_at))
    return intervals


def durations_of(intervals: dict[int, list[RunInterval]]) -> dict[int, float | None]:
    """Each job's duration from its intervals (`intervals_of_jobs`), when a caller needs both."""
    now = datetime.now(UTC)
    return {job_id: ran_for(spans, now) for job_id, spans in intervals.items()}


def durations_s(session: Session, job_ids: Sequence[int]) -> dict[int, float | None]:
    """Each job's duration, in one statement whatever the number of jobs."""
    return durations_of(intervals_of_jobs(session, job_ids))
