"""Read-only queries the web pages need beyond the API's services: log tails,
live metric appends, gallery steps and the queue. Team scoping is services.scoping's."""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import TypeAdapter
from sqlalchemy import Integer, and_, or_, select
from sqlalchemy.orm import Session, joinedload

from server.models import Job as Job  # the rows these reads return, for the pages' annotations
from server.models import JobStatus, LogLine
from server.models import Sample as Sample
from server.schemas.logs import LogLineOut
from server.services.auth import Caller
from server.services.current_points import CurrentPoints, current_points
from server.services.scoping import scope_jobs
from server.services.sql_text import column_types, rows_as_dicts, select_text


def visible_jobs(session: Session, caller: Caller, job_ids: Sequence[int]) -> list[Job]:
    """The jobs among `job_ids` the caller may see, in the order asked."""
    stmt = scope_jobs(select(Job).where(Job.id.in_(job_ids)), caller)
    found = {job.id: job for job in session.scalars(stmt)}
    return [found[i] for i in dict.fromkeys(job_ids) if i in found]


def queue(session: Session, caller: Caller) -> Sequence[Job]:
    """Queued jobs in the scheduler's order (priority, then first come first served): position = index + 1."""
    stmt = (
        scope_jobs(select(Job), caller)
        .where(Job.status == JobStatus.QUEUED)
        .options(joinedload(Job.owner), joinedload(Job.team))
        .order_by(Job.priority.desc(), Job.id)
    )
    return session.scalars(stmt).all()


_LOG_FIELDS = tuple(LogLineOut.model_fields)
_LOG_TAIL = select_text(
    f"SELECT {', '.join(_LOG_FIELDS)} FROM log_lines WHERE job_id = :job_id ORDER BY id DESC LIMIT :limit",
    **column_types(LogLine.__table__, *_LOG_FIELDS),
)
_LOG_LINES = TypeAdapter(list[LogLineOut])


def log_tail(session: Session, job_id: int, limit: int = 500) -> list[LogLineOut]:
    """The last `limit` log lines, oldest first (following continues with services.logs.read_logs)."""
    newest_first = rows_as_dicts(session.execute(_LOG_TAIL, {"job_id": job_id, "limit": limit}))
    return _LOG_LINES.validate_python(newest_first[::-1])


def sample_steps(session: Session, job_id: int, kind: str = "eval") -> list[int]:
    """Steps that have current samples of this kind (not of an attempt a retry superseded), ascending."""
    return sample_steps_of_jobs(session, [job_id], {job_id: current_points(session, job_id)}, kind)[job_id]


def sample_steps_of_jobs(
    session: Session, job_ids: Sequence[int], currents: dict[int, CurrentPoints], kind: str = "eval"
) -> dict[int, list[int]]:
    """`sample_steps` of many jobs in one statement (`currents`: every job's current_points)."""
    steps: dict[int, set[int]] = {job_id: set() for job_id in job_ids}
    stmt = (
        select(Sample.job_id, Sample.step, Sample.attempt)
        .where(Sample.job_id.in_(job_ids), Sample.kind == kind)
        .distinct()
    )
    for job_id, step, attempt in session.execute(stmt):
        if currents[job_id].is_current(attempt, step):
            steps[job_id].add(step)
    return {job_id: sorted(found) for job_id, found in steps.items()}


# Per attempt, its first eval sample: an attempt has a current sample if and only if its first one is.
_FIRST_SAMPLES = select_text(
    "SELECT attempt, min(step) AS first_step FROM samples WHERE job_id = :job_id AND kind = 'eval' GROUP BY attempt",
    attempt=Integer,
    first_step=Integer,
)


def has_current_samples(session: Session, job_id: int, current: CurrentPoints) -> bool:
    """Whether the gallery has anything to show: an eval sample no later attempt superseded."""
    rows = session.execute(_FIRST_SAMPLES, {"job_id": job_id})
    return any(current.is_current(attempt, first_step) for attempt, first_step in rows)


def samples_at(session: Session, job_id: int, steps: Sequence[int], kind: str = "eval") -> list[Sample]:
    """Current samples of the given steps, ordered by prompt, seed, step and attempt (a later attempt wins)."""
    return samples_at_of_jobs(session, {job_id: steps}, {job_id: current_points(session, job_id)}, kind)[job_id]


def samples_at_of_jobs(
    session: Session, steps: dict[int, Sequence[int]], currents: dict[int, CurrentPoints], kind: str = "eval"
) -> dict[int, list[Sample]]:
    """`samples_at` of many jobs, each at its own steps, in one statement (`currents`: every job's)."""
    out: dict[int, list[Sample]] = {job_id: [] for job_id in steps}
    wanted = [and_(Sample.job_id == job_id, Sample.step.in_(s)) for job_id, s in steps.items() if s]
    if not wanted:
        return out
    stmt = (
        select(Sample)
        .where(or_(*wanted), Sample.kind == kind)
        .order_by(Sample.job_id, Sample.prompt, Sample.seed, Sample.step, Sample.attempt)
    )
    for sample in session.scalars(stmt):
        if currents[sample.job_id].is_current(sample.attempt, sample.step):
            out[sample.job_id].append(sample)
    return out
