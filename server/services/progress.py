"""The trainer's progress report: the job's step and reward, and proof it is alive. (Its samples/s is not
stored: the job's samples/s is computed from the throughput metric, services.throughput.)"""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.models import Job, utcnow
from server.services.errors import AttemptSuperseded, Conflict
from trainer.spec.ingest import ProgressReport


def record_progress(session: Session, job: Job, progress: ProgressReport) -> bool:
    """Update the job's live fields; returns whether a cancel was requested. Commits. The progress of an attempt
    that is over is refused as superseded (only the current attempt's live fields are kept)."""
    if progress.attempt < job.attempt:
        raise AttemptSuperseded(job.id, progress.attempt, job.attempt)
    if progress.attempt > job.attempt:
        raise Conflict(f"attempt {progress.attempt} is newer than job {job.id}'s current attempt ({job.attempt})")
    job.step = progress.step
    job.total_steps = progress.total_steps
    if progress.reward is not None:
        job.last_reward = progress.reward
    job.last_progress_at = utcnow()
    session.commit()
    return job.cancel_requested
