"""The one place a job changes status, so every change follows the transition table and leaves a job event
behind, an attempt is opened when the job is placed, started with the job's trainer and closed when the job is no
longer placed (services.job_attempts),
a job that is no longer placed holds no job token, a job to place or devices freed wake the scheduler, and a job
that ends is told to its team's webhooks (services.webhook_events), a training job once its reward-hacking alarm is
checked on all its evaluations (services.reward_hacking)."""

from collections.abc import Sequence

from sqlalchemy.orm import Session

from server.config import get_settings
from server.models import JOB_TRANSITIONS, PLACED_STATES, TERMINAL_STATES, Job, JobEvent, JobStatus, utcnow
from server.services.errors import Conflict
from server.services.job_attempts import AttemptEnd, close_attempt, current_attempt, mark_started
from server.services.reward_hacking import check_reward_hacking
from server.services.scheduler_wakeup import wake_scheduler
from server.services.webhook_events import queue_job_end_events


class IllegalTransition(Conflict):
    """A status change the transition table (`JOB_TRANSITIONS`) does not allow."""

    def __init__(self, job_id: int, current: str, wanted: JobStatus) -> None:
        allowed = ", ".join(sorted(JOB_TRANSITIONS[JobStatus(current)]))
        super().__init__(f"job {job_id} cannot go from {current} to {wanted}; from {current} it may go to: {allowed}")


def set_status(
    session: Session,
    job: Job,
    status: JobStatus,
    message: str | None = None,
    *,
    ended_by: AttemptEnd = AttemptEnd.PLATFORM,
) -> None:
    """Move `job` to `status`; IllegalTransition when the table does not allow it from the job's status.

    A placed job sent back to the queue ends its attempt `ended_by` (the platform unless the caller says it was
    the job's own failure); one that ends (succeeded, failed, cancelled) ends it as finished."""
    if status not in JOB_TRANSITIONS[JobStatus(job.status)]:
        raise IllegalTransition(job.id, job.status, status)
    if job.status in PLACED_STATES and status not in PLACED_STATES:
        close_attempt(session, job, AttemptEnd.FINISHED if status in TERMINAL_STATES else ended_by)
    elif status == JobStatus.SCHEDULED:
        current_attempt(session, job)  # the placement's new attempt begins
    _record(session, job, status, message)
    if status in TERMINAL_STATES:
        check_reward_hacking(session, get_settings(), job)  # on every eval step, the last one's samples included
        queue_job_end_events(session, job)  # the team's webhooks hear of it once this unit of work commits
    if status == JobStatus.RUNNING:
        mark_started(session, job)  # after the job's own start, so the attempt never starts before it


def record_submitted(session: Session, jobs: Sequence[Job], message: str) -> None:
    """New jobs' first events: they are born queued (`Job.status`'s default), so there is no status to move
    from. The scheduler is woken once for all of them (an experiment submits its cells together)."""
    now = utcnow()
    session.add_all(
        JobEvent(job_id=job.id, attempt=job.attempt, status=JobStatus.QUEUED, message=message, created_at=now)
        for job in jobs
    )
    wake_scheduler(session)


def _record(session: Session, job: Job, status: JobStatus, message: str | None) -> None:
    job.status = status
    now = utcnow()
    if status == JobStatus.RUNNING and job.started_at is None:
        job.started_at = now
    if status in TERMINAL_STATES:
        job.finished_at = now
    if status not in PLACED_STATES:  # ended or back to the queue: the attempt's tokens write and score no more
        job.token_hash = job.reward_token_hash = None
    session.add(JobEvent(job_id=job.id, attempt=job.attempt, status=status, message=message, created_at=now))
    if status == JobStatus.QUEUED or status in TERMINAL_STATES:
        wake_scheduler(session)
