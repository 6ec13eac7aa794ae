"""The trainer's progress report, which is also its heartbeat."""

from __future__ import annotations

from pydantic import BaseModel, Field

from server.schemas.common import Attempt, FiniteOrNone, Step


class ProgressIn(BaseModel):
    attempt: Attempt
    step: Step
    total_steps: Step
    reward: FiniteOrNone = None
    # Accepted from trainers, not stored: a job's samples/s is computed from its throughput metric
    # (services.throughput), one definition for every page.
    samples_per_s: FiniteOrNone = Field(None, ge=0)


class ProgressStored(BaseModel):
    cancel_requested: bool = Field(description="the worker is about to stop this job")
