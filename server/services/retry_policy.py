"""What an infrastructure failure does to a job: back to the queue while attempts remain, else failed.

An infrastructure failure is anything but the trainer's own error: a lost host, a worker restarted or shut
down, a trainer killed by SIGKILL, a node that never started, a host an admin disabled.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import PLACED_STATES, Allocation, Host, Job, JobEvent, JobStatus, utcnow
from server.services.allocations import release_idle_allocations
from server.services.job_status import set_status


def started_attempts(session: Session, job_id: int) -> int:
    """How many times the trainer of a job started; an attempt that never ran does not count."""
    return (
        session.scalar(
            select(func.count())
            .select_from(JobEvent)
            .where(JobEvent.job_id == job_id, JobEvent.status == JobStatus.RUNNING)
        )
        or 0
    )


def retry_or_fail(session: Session, job: Job, reason: str) -> bool:
    """An infrastructure failure: back to the queue while attempts remain, else failed. True if requeued.

    Either way the attempt is over: its other nodes find it so at their next poll and stop their process
    group, then free their devices (which stay held until then)."""
    release_idle_allocations(session, job.id)
    if job.cancel_requested:
        set_status(session, job, JobStatus.CANCELLED, reason)
        return False
    used = started_attempts(session, job.id)
    if used < job.max_attempts:
        job.error = None  # a node's error seen while the attempt was failing is not the job's
        set_status(session, job, JobStatus.QUEUED, f"{reason}; retrying ({used} of {job.max_attempts} attempts used)")
        return True
    job.error = f"{reason}; no attempts left ({used} of {job.max_attempts} used)"
    set_status(session, job, JobStatus.FAILED, job.error)
    return False


def requeue_jobs_on_host(session: Session, host: Host, reason: str) -> list[int]:
    """Send every active job whose current attempt holds a device of `host` back to the queue (or fail it when
    out of attempts); its nodes elsewhere are stopped by their workers.

    A task for a job's old attempt that the broker delivers later finds the attempt changed and does nothing.
    """
    on_host = (
        select(Allocation.job_id)
        .where(Allocation.host_id == host.id, Allocation.released_at.is_(None), Allocation.attempt == Job.attempt)
        .correlate(Job)
    )
    jobs = session.scalars(
        select(Job).where(Job.status.in_(PLACED_STATES), Job.id.in_(on_host)).order_by(Job.id).with_for_update()
    ).all()
    for job in jobs:
        retry_or_fail(session, job, reason)
    return [job.id for job in jobs]


def requeue_interrupted_jobs(session: Session, host: Host) -> list[int]:
    """A worker that (re)starts runs nothing yet: every device of its host is free, and the jobs whose current
    attempt held one were interrupted."""
    requeued = requeue_jobs_on_host(session, host, f"worker on host {host.name} restarted")
    now = utcnow()
    for allocation in session.scalars(
        select(Allocation).where(Allocation.host_id == host.id, Allocation.released_at.is_(None))
    ):
        allocation.released_at = now
    return requeued
