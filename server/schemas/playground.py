"""Playground runs: the request (prompts, seeds, sampler settings, the checkpoint's step) and each run with its grid."""

from __future__ import annotations

from pydantic import BaseModel, Field

from server.schemas.common import UtcDatetime
from trainer.spec.playground_task import PlaygroundSettings, SamplerSettings


class PlaygroundRequest(PlaygroundSettings):
    step: int | None = Field(
        None, ge=0, le=2**31 - 1, description="the checkpoint's step; default: the final model, else the latest"
    )


class PlaygroundRun(BaseModel):
    """One playground job: what it draws, on which checkpoint, how it stands, and its grid once written."""

    job_id: int = Field(description="the playground job (a task job of kind playground)")
    status: str
    source_job_id: int | None
    source_artifact_id: int | None
    step: int = Field(description="the checkpoint's step")
    prompts: list[str]
    seeds: list[int]
    sampler: SamplerSettings
    created_at: UtcDatetime
    error: str | None
    grid_artifact_id: int | None = Field(description="the playground job's `grid` artifact, once written")
    images_artifact_id: int | None = Field(description="its `images` artifact: the single images and their manifest")
    grid_url: str | None = Field(
        description="the grid PNG (rows prompt x seed, columns base | trained), once the platform holds its bytes"
    )
    images_url: str | None = Field(description="the single images and their manifest, one tar, once held likewise")


class PlaygroundList(BaseModel):
    items: list[PlaygroundRun]
