"""The checkpoint a task job reads (trainer.spec.task): its own module, so each task kind's file can name it."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class CheckpointSource(BaseModel):
    """A checkpoint (or a job's final model) the platform registered: the job, the artifact, its step and its
    path relative to that job's folder."""

    model_config = ConfigDict(extra="forbid")

    job_id: int = Field(ge=1)
    artifact_id: int = Field(ge=1)
    step: int = Field(ge=0)
    path: str = Field(min_length=1, max_length=400)
