"""What an infrastructure failure does to a job: back to the queue while its limit allows, else failed.

An infrastructure failure is anything but the trainer's own error. Most are the platform's own: a lost host, a
worker restarted or shut down, a node that never started, a host an admin disabled, a platform part unreachable
(the trainer's exit code 75). Those are restarts of the platform, bounded by `retry.max_platform_restarts`. One is
the job's own failure that a retry may cure: its trainer killed by SIGKILL (out of memory?), bounded by
`retry.max_attempts`. The two are counted apart (services.attempt_counts), so the platform restarting does not
use up the attempts a job has for its own failures.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import PLACED_STATES, Allocation, Host, Job, JobStatus, utcnow
from server.services.allocations import release_idle_allocations
from server.services.attempt_counts import JobLimits, attempt_counts
from server.services.job_attempts import AttemptEnd
from server.services.job_status import set_status


def retry_or_fail(session: Session, job: Job, reason: str, ended_by: AttemptEnd = AttemptEnd.PLATFORM) -> bool:
    """An infrastructure failure, the platform's own or (`ended_by` FAILURE) the job's: back to the queue while
    its limit allows, else failed. True if requeued.

    Either way the attempt is over: its other nodes find it so at their next poll and stop their process
    group, then free their devices (which stay held until then)."""
    release_idle_allocations(session, job.id)
    if job.cancel_requested:
        set_status(session, job, JobStatus.CANCELLED, reason)
        return False
    limits = JobLimits(job.id, job.attempt, job.max_attempts, job.max_platform_restarts)
    counts = attempt_counts(session, [limits])[job.id]
    if ended_by == AttemptEnd.FAILURE:
        used = counts.retries_after_failure + 1  # this attempt's failure included
        if used < job.max_attempts:
            job.error = None  # a node's error seen while the attempt was failing is not the job's
            message = f"{reason}; retrying ({used} of {job.max_attempts} attempts used)"
            set_status(session, job, JobStatus.QUEUED, message, ended_by=AttemptEnd.FAILURE)
            return True
        job.error = f"{reason}; no attempts left ({used} of {job.max_attempts} used)"
    else:
        restart = counts.platform_restarts + 1
        if restart <= job.max_platform_restarts:
            job.error = None
            message = f"{reason}; restarted by the platform ({restart} of {job.max_platform_restarts} restarts)"
            set_status(session, job, JobStatus.QUEUED, message, ended_by=AttemptEnd.PLATFORM)
            return True
        used = counts.platform_restarts
        job.error = f"{reason}; no platform restarts left ({used} of {job.max_platform_restarts} used)"
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
