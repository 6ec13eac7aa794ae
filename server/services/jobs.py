"""Submitting, cancelling and retrying jobs, for the API and the web pages alike (reading them: job_reads)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import TERMINAL_STATES, Job, JobStatus
from server.schemas.jobs import JobDetail
from server.services import audit
from server.services.auth import Caller
from server.services.capacity import check_capacity
from server.services.dataset_pins import pin_datasets
from server.services.errors import Conflict, FieldErrors
from server.services.hub_warning import hub_model_warning
from server.services.job_reads import job_detail
from server.services.job_status import record_submitted, set_status
from server.services.reward_reachability import queue_reward_probes
from server.services.scoping import ensure_can_act, get_visible_job, team_for_submission
from server.services.service_rewards import check_service_rewards
from server.services.submission_limits import check_queue_room, check_spec_size
from server.states import JobKind
from trainer.spec import JobSpec, parse_spec, spec_errors


def validate_spec(data: Any, settings: Settings) -> JobSpec:
    """trainer.spec's verdict, as 422 field errors (`algorithm.group_size`, ...)."""
    check_spec_size(data, settings)
    try:
        return parse_spec(
            data,
            path_roots=settings.resolved_path_roots(),
            base_dir=str(settings.resolved_data_root()),
            allow_private_urls=settings.allow_private_urls,
        )
    except ValueError as exc:  # pydantic.ValidationError is a ValueError
        raise FieldErrors(spec_errors(exc)) from exc


def submit_job(
    session: Session,
    caller: Caller,
    data: Any,
    settings: Settings,
    team_name: str | None = None,
    *,
    kind: JobKind = JobKind.TRAIN,
    **columns: Any,
) -> JobDetail:
    """Validate, check that some host could run it, store it queued. Nothing is stored on any error. ``kind`` and
    ``columns``: the advisor's probe job or a job submitted from an advice (``advice_id``, services.advice), a task
    job (``task``, ``source_artifact_id``, services.task_jobs)."""
    spec = validate_spec(data, settings)
    team = team_for_submission(caller, team_name)
    check_service_rewards(session, spec, team.team_id, team.team_name)
    check_capacity(session, spec)
    check_queue_room(session, caller.user_id, team.team_id, settings)
    job = add_job(session, caller, spec, team.team_id, kind=kind, **columns)
    queue_reward_probes(session, [job], settings)
    session.commit()
    detail = job_detail(session, caller, job.id)
    warning = hub_model_warning(session, spec.model.path, spec.resources.device_type)
    if warning:
        detail.warnings.append(warning)
    return detail


def add_job(session: Session, caller: Caller, spec: JobSpec, team_id: int, **columns: Any) -> Job:
    """A checked spec as a queued job (`add_jobs` of one); `columns` sets more of the job's columns."""
    return add_jobs(session, caller, [spec], team_id, [columns])[0]


def add_jobs(
    session: Session, caller: Caller, specs: Sequence[JobSpec], team_id: int, columns: Sequence[dict[str, Any]]
) -> list[Job]:
    """Checked specs as queued jobs, with their submitted events and audit rows, in the caller's unit of work
    (uncommitted: an experiment adds all its cells or none). `columns[i]` sets more of job i's columns. The
    jobs are inserted in one flush, in order, so their ids follow the order of `specs`; the events and audit
    rows follow in the next, each kind in one batch. A spec naming a team dataset is pinned to its version first."""
    for spec, more in zip(specs, columns, strict=True):
        pin_datasets(session, spec, team_id, trains=more.get("kind", JobKind.TRAIN) == JobKind.TRAIN)
    jobs = [
        Job(
            name=spec.name,
            spec=spec.model_dump(mode="json"),
            status=JobStatus.QUEUED,
            priority=spec.resources.priority,
            algorithm=spec.algorithm.name,
            executor=spec.executor.name,
            model_family=spec.model.family,
            device_type=spec.resources.device_type,
            devices=spec.resources.devices,
            nodes=spec.resources.nodes,
            max_attempts=spec.retry.max_attempts,
            max_platform_restarts=spec.retry.max_platform_restarts,
            total_steps=spec.algorithm.total_steps,  # known from the spec: a queued job shows "0 of N steps"
            owner_id=caller.user_id,
            team_id=team_id,
            **more,
        )
        for spec, more in zip(specs, columns, strict=True)
    ]
    session.add_all(jobs)
    session.flush()
    record_submitted(session, jobs, f"submitted by {caller.username}")
    for job in jobs:
        audit.record(session, "job.submit", caller, team_id=job.team_id, job_id=job.id, detail=job.name)
    return jobs


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
    immediate = job.status == JobStatus.QUEUED
    if immediate:
        set_status(session, job, JobStatus.CANCELLED, f"cancelled by {caller.username}")
    else:
        job.cancel_requested = True
    detail = None if immediate else f"requested while {job.status}"
    audit.record(session, "job.cancel", caller, team_id=job.team_id, job_id=job.id, detail=detail)
    session.commit()
    return job_detail(session, caller, job_id), immediate


def retry_job(session: Session, caller: Caller, job_id: int, settings: Settings) -> JobDetail:
    """A finished job goes back to the queue, if it has room (429 as for submit); the scheduler starts it as
    the next attempt."""
    ensure_can_act(caller, get_visible_job(session, caller, job_id))
    job = lock_job(session, job_id)
    if job.status not in TERMINAL_STATES:
        session.rollback()
        raise Conflict(f"job {job_id} is {job.status}; only succeeded, failed or cancelled jobs can be retried")
    check_queue_room(session, job.owner_id, job.team_id, settings)
    requeue_job(session, caller, job)
    session.commit()
    return job_detail(session, caller, job_id)


def requeue_job(session: Session, caller: Caller, job: Job) -> None:
    """A finished (locked) job back to the queue as a fresh run, audited; the caller commits."""
    job.error = None
    job.wait_reason = None
    job.cancel_requested = False
    job.started_at = None
    job.finished_at = None
    job.step = 0
    job.last_reward = None
    job.last_progress_at = None
    set_status(session, job, JobStatus.QUEUED, f"retried by {caller.username}")
    audit.record(session, "job.retry", caller, team_id=job.team_id, job_id=job.id)
