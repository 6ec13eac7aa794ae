"""Checkpoints and final models a job registered."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from server.schemas.common import Attempt, ReadModel, Step, UtcDatetime


class ArtifactIn(BaseModel):
    attempt: Attempt
    kind: Literal["checkpoint", "model"]
    name: str = Field(min_length=1, max_length=200)
    step: Step | None = None
    path: str = Field(min_length=1, max_length=400, description="relative to the trainer's --output-dir")


class ArtifactOut(ReadModel):
    id: int
    attempt: int
    kind: str
    name: str
    step: int | None
    path: str
    size_bytes: int | None
    created_at: UtcDatetime


class ArtifactList(BaseModel):
    items: list[ArtifactOut]
