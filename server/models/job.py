"""A training job, its status history, its attempts, and the files it produced."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, utcnow
from server.states import JobKind, JobStatus


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (Index("ix_jobs_queue", "status", "priority", "id"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(200))
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(20), default=JobStatus.QUEUED, index=True)
    priority: Mapped[int] = mapped_column(Integer, default=0)
    algorithm: Mapped[str] = mapped_column(String(40))
    executor: Mapped[str] = mapped_column(String(40))
    model_family: Mapped[str] = mapped_column(String(40))
    device_type: Mapped[str] = mapped_column(String(10))
    devices: Mapped[int] = mapped_column(Integer)
    nodes: Mapped[int] = mapped_column(Integer, default=1)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    max_attempts: Mapped[int] = mapped_column(Integer, default=3)  # attempts ended by the job's own failures
    max_platform_restarts: Mapped[int] = mapped_column(Integer, default=10, server_default="10")
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"), index=True)
    token_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    # Node 0's reward token (services.tokens.REWARD_TOKEN_PREFIX): the only credential its trainer sends reward URLs.
    reward_token_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    wait_reason: Mapped[str | None] = mapped_column(String(300))
    error: Mapped[str | None] = mapped_column(Text)
    step: Mapped[int] = mapped_column(Integer, default=0)
    total_steps: Mapped[int] = mapped_column(Integer, default=0)
    last_reward: Mapped[float | None] = mapped_column()
    last_progress_at: Mapped[datetime | None] = mapped_column(DateTime)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    finished_at: Mapped[datetime | None] = mapped_column(DateTime)
    # A cell of an experiment: the experiment, and the cell's value of each axis ({"seed": 2, ...}).
    experiment_id: Mapped[int | None] = mapped_column(ForeignKey("experiments.id", ondelete="SET NULL"), index=True)
    experiment_cell: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    kind: Mapped[str] = mapped_column(String(20), default=JobKind.TRAIN, server_default=JobKind.TRAIN.value)
    # The advice this job probes for (kind "probe"), or was submitted from (kind "train").
    advice_id: Mapped[int | None] = mapped_column(
        ForeignKey("advice.id", ondelete="SET NULL", name="fk_jobs_advice_id"), index=True
    )
    # A task job's task (trainer.spec.task: an export, an evaluation, a playground grid) and the checkpoint it reads.
    task: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    source_artifact_id: Mapped[int | None] = mapped_column(
        ForeignKey("artifacts.id", ondelete="SET NULL", name="fk_jobs_source_artifact_id"), index=True
    )

    owner = relationship("User")
    team = relationship("Team")
    events: Mapped[list[JobEvent]] = relationship(back_populates="job", order_by="JobEvent.id")


class JobEvent(Base):
    __tablename__ = "job_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    status: Mapped[str] = mapped_column(String(20))
    message: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)

    job: Mapped[Job] = relationship(back_populates="events")


class JobAttempt(Base):
    """One attempt of a job, from its placement to its end (services.job_attempts): when its trainer started and
    was last seen running (a job's duration sums these intervals, services.job_duration), who ended it (the
    platform or the job's own failure, services.attempt_counts), and node 0's job token, kept so that a reporter
    of an attempt that is over is told so rather than refused as unknown."""

    __tablename__ = "job_attempts"
    __table_args__ = (UniqueConstraint("job_id", "attempt", name="uq_job_attempts_job_attempt"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    token_hash: Mapped[str | None] = mapped_column(String(64), index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    last_seen_at: Mapped[datetime | None] = mapped_column(DateTime)
    ended_at: Mapped[datetime | None] = mapped_column(DateTime)
    ended_by: Mapped[str | None] = mapped_column(String(20))  # services.job_attempts.AttemptEnd


class Artifact(Base):
    __tablename__ = "artifacts"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    kind: Mapped[str] = mapped_column(String(20))
    name: Mapped[str] = mapped_column(String(200))
    step: Mapped[int | None] = mapped_column(Integer)
    path: Mapped[str] = mapped_column(String(500))
    size_bytes: Mapped[int | None] = mapped_column(BigInteger)  # checkpoints pass 2 GiB
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    # The bytes the platform holds (docs/artifacts.md): set together when an upload completes, cleared together
    # when retention deletes them. `store_key` names the object in the artifact store.
    sha256: Mapped[str | None] = mapped_column(String(64))
    packing: Mapped[str | None] = mapped_column(String(10))  # "file", or "tar" for a folder
    store_key: Mapped[str | None] = mapped_column(String(300))
    uploaded_at: Mapped[datetime | None] = mapped_column(DateTime)
    pruned_at: Mapped[datetime | None] = mapped_column(DateTime)
