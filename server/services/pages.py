"""Read-only queries the web pages need beyond the API's services: password login, log tails,
live metric appends, gallery steps, the queue and compare figures. Team scoping is services.scoping's."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import func, select
from sqlalchemy.orm import Session, joinedload

from server.models import Job, LogLine, Metric, Sample, User
from server.services.auth import Caller
from server.services.scoping import scope_jobs

_hasher = PasswordHasher()


def user_for_password(session: Session, username: str, password: str) -> User | None:
    """The user whose argon2 password hash matches, else None."""
    user = session.scalar(select(User).where(User.username == username.strip()))
    if user is None or not user.password_hash:
        return None
    try:
        _hasher.verify(user.password_hash, password)
    except (VerificationError, InvalidHashError):
        return None
    return user


def visible_jobs(session: Session, caller: Caller, job_ids: Sequence[int]) -> list[Job]:
    """The jobs among `job_ids` the caller may see, in the order asked."""
    stmt = scope_jobs(select(Job).where(Job.id.in_(job_ids)), caller)
    found = {job.id: job for job in session.scalars(stmt)}
    return [found[i] for i in dict.fromkeys(job_ids) if i in found]


def queue(session: Session, caller: Caller) -> Sequence[Job]:
    """Queued jobs in the scheduler's order (priority, then first come first served): position = index + 1."""
    stmt = (
        scope_jobs(select(Job), caller)
        .where(Job.status == "queued")
        .options(joinedload(Job.owner), joinedload(Job.team))
        .order_by(Job.priority.desc(), Job.id)
    )
    return session.scalars(stmt).all()


def log_tail(session: Session, job_id: int, limit: int = 500) -> list[LogLine]:
    """The last `limit` log lines, oldest first (following continues with services.logs.read_logs)."""
    stmt = select(LogLine).where(LogLine.job_id == job_id).order_by(LogLine.id.desc()).limit(limit)
    return list(reversed(session.scalars(stmt).all()))


@dataclass
class Point:
    step: int
    value: float
    wall_time: float


def latest_points(session: Session, job_id: int, keys: Sequence[str]) -> dict[str, Point]:
    """The last current point of each key (the job page's table of latest values)."""
    out: dict[str, Point] = {}
    for key in keys:
        row = session.execute(
            select(Metric.step, Metric.value, Metric.wall_time)
            .where(Metric.job_id == job_id, Metric.key == key, Metric.superseded.is_(False))
            .order_by(Metric.step.desc())
            .limit(1)
        ).first()
        if row is not None:
            out[key] = Point(*row)
    return out


def points_after(
    session: Session, job_id: int, keys: Sequence[str], after_step: int, limit: int
) -> dict[str, list[Point]]:
    """Raw current points with step > after_step, per key, at most `limit` each: the live chart appends."""
    out: dict[str, list[Point]] = {}
    for key in keys:
        rows = session.execute(
            select(Metric.step, Metric.value, Metric.wall_time)
            .where(Metric.job_id == job_id, Metric.key == key, Metric.step > after_step, Metric.superseded.is_(False))
            .order_by(Metric.step)
            .limit(limit)
        ).all()
        out[key] = [Point(*r) for r in rows]
    return out


def wall_times(session: Session, job_id: int, steps: Sequence[int]) -> dict[int, float]:
    """When each step was reported (earliest point of the step): the compare page's wall-clock axis."""
    if not steps:
        return {}
    rows = session.execute(
        select(Metric.step, func.min(Metric.wall_time))
        .where(Metric.job_id == job_id, Metric.step.in_(steps), Metric.superseded.is_(False))
        .group_by(Metric.step)
    )
    return {step: wall for step, wall in rows}


@dataclass
class JobFigures:
    """One job's row in the compare table."""

    final_reward: float | None
    best_reward: float | None
    samples_per_s: float | None
    peak_memory: float | None
    wall_seconds: float | None


def job_figures(session: Session, job_id: int) -> JobFigures:
    """Final and best reward, mean throughput, peak memory and the wall-clock span of a job's metrics."""
    current = (Metric.job_id == job_id, Metric.superseded.is_(False))

    def aggregate(fn: object, key: str) -> float | None:
        return session.scalar(select(fn(Metric.value)).where(*current, Metric.key == key))  # type: ignore[operator]

    final = latest_points(session, job_id, ["reward/mean"]).get("reward/mean")
    first, last = session.execute(select(func.min(Metric.wall_time), func.max(Metric.wall_time)).where(*current)).one()
    return JobFigures(
        final_reward=final.value if final else None,
        best_reward=aggregate(func.max, "reward/mean"),
        samples_per_s=aggregate(func.avg, "throughput/samples_per_s"),
        peak_memory=aggregate(func.max, "memory/peak_bytes"),
        wall_seconds=(last - first) if first is not None and last is not None else None,
    )


def sample_steps(session: Session, job_id: int, kind: str = "eval") -> list[int]:
    """Steps that have samples of this kind, ascending."""
    stmt = select(Sample.step).where(Sample.job_id == job_id, Sample.kind == kind).distinct().order_by(Sample.step)
    return list(session.scalars(stmt))


def samples_at(session: Session, job_id: int, steps: Sequence[int], kind: str = "eval") -> Sequence[Sample]:
    """Samples of the given steps, ordered by prompt, seed, step and attempt (a later attempt wins)."""
    stmt = (
        select(Sample)
        .where(Sample.job_id == job_id, Sample.kind == kind, Sample.step.in_(steps))
        .order_by(Sample.prompt, Sample.seed, Sample.step, Sample.attempt)
    )
    return session.scalars(stmt).all()
