"""The answer to the trainer's progress report (the report itself: trainer.spec.ingest.ProgressReport)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class ProgressStored(BaseModel):
    cancel_requested: bool = Field(description="the worker is about to stop this job")
