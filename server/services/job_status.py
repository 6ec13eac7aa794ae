"""The one place a job changes status, so every change leaves a job event behind, and a job to place or
devices freed wake the scheduler."""

from sqlalchemy.orm import Session

from server.models import TERMINAL_STATES, Job, JobEvent, utcnow
from server.services.scheduler_wakeup import wake_scheduler


def set_status(session: Session, job: Job, status: str, message: str | None = None) -> None:
    job.status = status
    now = utcnow()
    if status == "running" and job.started_at is None:
        job.started_at = now
    if status in TERMINAL_STATES:
        job.finished_at = now
        job.token_hash = None
    session.add(JobEvent(job_id=job.id, attempt=job.attempt, status=status, message=message, created_at=now))
    if status == "queued" or status in TERMINAL_STATES:
        wake_scheduler(session)
