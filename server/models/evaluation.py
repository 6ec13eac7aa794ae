"""Evaluations (a prompt set x rewards on a checkpoint or a base model, each run as an eval task job) with the
figures the platform computed from their scores, and the reward-hacking alarm a training job raised.

An evaluation row is written when its task job is queued (what it evaluates) and completed when the trainer
reports its scores (`reported_at`); a job's evaluations are one query on `source_job_id`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, Float, ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, utcnow


class Evaluation(Base):
    __tablename__ = "evaluations"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), unique=True)  # the task job
    source_job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), index=True)
    source_artifact_id: Mapped[int | None] = mapped_column(ForeignKey("artifacts.id", ondelete="SET NULL"))
    step: Mapped[int | None] = mapped_column(Integer)  # the checkpoint's step; none: the base model
    prompt_set: Mapped[str] = mapped_column(String(200))
    seeds_per_prompt: Mapped[int] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    reported_at: Mapped[datetime | None] = mapped_column(DateTime)
    prompts: Mapped[list[str] | None] = mapped_column(JSON)  # as reported, in the order of the per-prompt scores

    rewards: Mapped[list[EvaluationReward]] = relationship(
        cascade="all, delete-orphan", order_by="EvaluationReward.id", lazy="selectin"
    )


class EvaluationReward(Base):
    """One reward's figures over an evaluation's samples (server.services.evaluation_figures)."""

    __tablename__ = "evaluation_rewards"

    id: Mapped[int] = mapped_column(primary_key=True)
    evaluation_id: Mapped[int] = mapped_column(ForeignKey("evaluations.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(100))
    mean: Mapped[float] = mapped_column(Float)
    std: Mapped[float] = mapped_column(Float)
    n: Mapped[int] = mapped_column(Integer)
    per_prompt: Mapped[list[Any]] = mapped_column(JSON)  # each prompt's mean over its seeds


class RewardHackingAlarm(Base):
    """A training job's reward-hacking alarm, written once when it first fires (its webhook event with it)."""

    __tablename__ = "reward_hacking_alarms"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id", ondelete="CASCADE"), primary_key=True)
    fired_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    series: Mapped[str] = mapped_column(String(300))  # the held-out series that fell
    first_step: Mapped[int] = mapped_column(Integer)
    last_step: Mapped[int] = mapped_column(Integer)
    training_rise: Mapped[float] = mapped_column(Float)
    held_out_drop: Mapped[float] = mapped_column(Float)
