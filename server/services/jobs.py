"""Submitting, listing, reading, cancelling and retrying jobs, for the API and the web pages alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, func, select, update
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import JOB_STATES, TERMINAL_STATES, Allocation, Device, Host, Job, JobEvent, Team, User
from server.schemas.jobs import JobDetail, JobPage, JobSummary
from server.services import audit
from server.services.auth import Caller
from server.services.capacity import check_capacity
from server.services.errors import Conflict, FieldErrors, NotFound
from server.services.job_status import set_status
from server.services.scoping import ensure_can_act, get_visible_job, scope_jobs, team_for_submission
from trainer.spec import JobSpec, parse_spec, spec_errors

_SUMMARY_FIELDS = tuple(f for f in JobSummary.model_fields if f not in ("owner", "team"))
# The list reads only the summary's columns (no spec, no ORM objects), owner and team names joined in.
_SUMMARY_COLUMNS = tuple(getattr(Job, f) for f in _SUMMARY_FIELDS)


@dataclass(frozen=True)
class JobFilters:
    statuses: tuple[str, ...] = ()
    executor: str | None = None
    algorithm: str | None = None
    name: str | None = None


def validate_spec(data: Any, settings: Settings) -> JobSpec:
    """trainer.spec's verdict, as 422 field errors (`algorithm.group_size`, ...)."""
    try:
        return parse_spec(data, path_roots=settings.resolved_path_roots())
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise FieldErrors(spec_errors(exc)) from exc


def submit_job(
    session: Session, caller: Caller, data: Any, settings: Settings, team_name: str | None = None
) -> JobDetail:
    """Validate, check that some host could run it, store it queued. Nothing is stored on any error."""
    spec = validate_spec(data, settings)
    team = team_for_submission(caller, team_name)
    check_capacity(session, spec)
    job = Job(
        name=spec.name,
        spec=spec.model_dump(mode="json"),
        status="queued",
        priority=spec.resources.priority,
        algorithm=spec.algorithm.name,
        executor=spec.executor.name,
        model_family=spec.model.family,
        device_type=spec.resources.device_type,
        devices=spec.resources.devices,
        nodes=spec.resources.nodes,
        max_attempts=spec.retry.max_attempts,
        owner_id=caller.user_id,
        team_id=team.team_id,
    )
    session.add(job)
    session.flush()
    set_status(session, job, "queued", f"submitted by {caller.username}")
    audit.record(session, "job.submit", caller, team_id=job.team_id, job_id=job.id, detail=job.name)
    session.commit()
    return job_detail(session, caller, job.id)


def parse_filters(
    status: str | None = None, executor: str | None = None, algorithm: str | None = None, name: str | None = None
) -> JobFilters:
    """Query-string filters; `status` may list several, comma-separated."""
    statuses = tuple(s.strip() for s in (status or "").split(",") if s.strip())
    unknown = [s for s in statuses if s not in JOB_STATES]
    if unknown:
        raise FieldErrors.one("status", f"unknown status {unknown[0]!r}; allowed: {', '.join(JOB_STATES)}")
    return JobFilters(statuses, executor or None, algorithm or None, name or None)


def list_jobs(session: Session, caller: Caller, filters: JobFilters, limit: int = 50, offset: int = 0) -> JobPage:
    """Newest first, within the caller's teams; `total` counts every match, not just this page."""
    conditions: list[ColumnElement[bool]] = []
    if filters.statuses:
        conditions.append(Job.status.in_(filters.statuses))
    if filters.executor:
        conditions.append(Job.executor == filters.executor)
    if filters.algorithm:
        conditions.append(Job.algorithm == filters.algorithm)
    if filters.name:
        conditions.append(Job.name.icontains(filters.name, autoescape=True))
    total = session.scalar(scope_jobs(select(func.count()).select_from(Job).where(*conditions), caller)) or 0
    rows = session.execute(
        scope_jobs(select(*_SUMMARY_COLUMNS, User.username.label("owner"), Team.name.label("team")), caller)
        .outerjoin(User, User.id == Job.owner_id)
        .outerjoin(Team, Team.id == Job.team_id)
        .where(*conditions)
        .order_by(Job.id.desc())
        .limit(limit)
        .offset(offset)
    ).mappings()
    return JobPage(
        items=[JobSummary.model_validate(dict(row)) for row in rows], total=total, limit=limit, offset=offset
    )


def job_detail(session: Session, caller: Caller, job_id: int) -> JobDetail:
    """Everything the job page shows: spec, status history, progress, and the devices of its current attempt.
    Three queries: the job with its owner's and team's names, its devices, its events."""
    found = session.execute(
        scope_jobs(select(Job, User.username, Team.name), caller)
        .outerjoin(User, User.id == Job.owner_id)
        .outerjoin(Team, Team.id == Job.team_id)
        .where(Job.id == job_id)
    ).one_or_none()
    if found is None:
        raise NotFound(f"job {job_id} not found")
    job, owner, team = found
    allocations = session.execute(
        select(
            Allocation.attempt,
            Host.name.label("host"),
            Device.index.label("device_index"),
            Device.device_type,
            Allocation.node_rank,
            Allocation.released_at,
        )
        .join(Device, Device.id == Allocation.device_id)
        .join(Host, Host.id == Allocation.host_id)
        .where(Allocation.job_id == job.id, Allocation.attempt == job.attempt)
        .order_by(Allocation.node_rank, Device.index)
    ).mappings()
    events = session.execute(
        select(JobEvent.attempt, JobEvent.status, JobEvent.message, JobEvent.created_at)
        .where(JobEvent.job_id == job.id)
        .order_by(JobEvent.id)
    ).mappings()
    return JobDetail.model_validate(
        {
            **{name: getattr(job, name) for name in _SUMMARY_FIELDS},
            "owner": owner,
            "team": team,
            "spec": job.spec,
            "events": [dict(event) for event in events],
            "allocations": [dict(allocation) for allocation in allocations],
        }
    )


def lock_job(session: Session, job_id: int) -> Job:
    """Hold the job's row until commit and return it fresh, so a status decision cannot race the scheduler.

    A no-op UPDATE takes the row lock on PostgreSQL and the database write lock on SQLite; the
    reload afterwards therefore sees the latest committed status.
    """
    session.execute(
        update(Job)
        .where(Job.id == job_id)
        .values(cancel_requested=Job.cancel_requested)
        .execution_options(synchronize_session=False)
    )
    return session.scalars(select(Job).where(Job.id == job_id).execution_options(populate_existing=True)).one()


def cancel_job(session: Session, caller: Caller, job_id: int) -> tuple[JobDetail, bool]:
    """Queued → cancelled now (True); scheduled/running → cancel_requested for the worker (False); terminal → 409."""
    ensure_can_act(caller, get_visible_job(session, caller, job_id))
    job = lock_job(session, job_id)
    if job.status in TERMINAL_STATES:
        session.rollback()
        raise Conflict(f"job {job_id} is already {job.status}")
    immediate = job.status == "queued"
    if immediate:
        set_status(session, job, "cancelled", f"cancelled by {caller.username}")
    else:
        job.cancel_requested = True
    detail = None if immediate else f"requested while {job.status}"
    audit.record(session, "job.cancel", caller, team_id=job.team_id, job_id=job.id, detail=detail)
    session.commit()
    return job_detail(session, caller, job_id), immediate


def retry_job(session: Session, caller: Caller, job_id: int) -> JobDetail:
    """A finished job goes back to the queue; the scheduler starts it as the next attempt."""
    ensure_can_act(caller, get_visible_job(session, caller, job_id))
    job = lock_job(session, job_id)
    if job.status not in TERMINAL_STATES:
        session.rollback()
        raise Conflict(f"job {job_id} is {job.status}; only succeeded, failed or cancelled jobs can be retried")
    job.error = None
    job.wait_reason = None
    job.cancel_requested = False
    job.started_at = None
    job.finished_at = None
    job.step = 0
    job.last_reward = None
    job.samples_per_s = None
    job.last_progress_at = None
    set_status(session, job, "queued", f"retried by {caller.username}")
    audit.record(session, "job.retry", caller, team_id=job.team_id, job_id=job.id)
    session.commit()
    return job_detail(session, caller, job_id)
