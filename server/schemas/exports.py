"""Exports of a job's checkpoint: the request, and each export job with the artifact it wrote."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from server.schemas.artifacts import ArtifactOut
from server.schemas.common import UtcDatetime


class ExportRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    format: str = Field(min_length=1, max_length=20, description="diffusers, comfyui or merged (as the family has)")
    step: int | None = Field(
        None, ge=0, le=2**31 - 1, description="the checkpoint's step; default: the final model, else the latest"
    )


class ExportOut(BaseModel):
    """One export job: what it exports, how it stands, and the artifact it wrote once it succeeded."""

    job_id: int
    status: str
    format: str
    step: int
    source_artifact_id: int | None
    created_at: UtcDatetime
    error: str | None
    artifact: ArtifactOut | None


class ExportList(BaseModel):
    items: list[ExportOut]
    formats: list[str] = Field(description="the formats this job's family and fine-tune mode can be exported in")
