"""Storing a trainer's metric batch: each point once under its natural key (job, attempt, key, step).

A batch is merged into the blocks it touches (services.metric_blocks): one read of those blocks, one
multi-row upsert, whatever the batch size. A re-sent or overlapping batch keeps what is stored and adds
only the steps that are new, so it costs no more than the first send. Reads are services.metric_reads.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.models import Job
from server.services import metric_blocks
from server.services.current_points import record_first_step
from server.services.errors import Conflict, PayloadTooLarge
from trainer.spec.ingest import MetricBatch


def store_metric_batch(session: Session, job: Job, batch: MetricBatch, max_points: int) -> tuple[int, int]:
    """Store a trainer's batch; returns (points newly stored, non-finite points skipped). Commits."""
    if batch.point_count > max_points:
        raise PayloadTooLarge(f"batch has {batch.point_count} points; the limit is {max_points}")
    if batch.attempt > job.attempt:
        raise Conflict(f"attempt {batch.attempt} is newer than job {job.id}'s current attempt ({job.attempt})")
    points, skipped = metric_blocks.BatchPoints.of_steps(batch.steps)
    stored = 0
    if points.by_key:
        first_step = min(int(p["step"].min()) for p in points.by_key.values())
        record_first_step(session, job.id, batch.attempt, first_step)
        stored = metric_blocks.store(session, job.id, batch.attempt, points)
    session.commit()
    return stored, skipped
