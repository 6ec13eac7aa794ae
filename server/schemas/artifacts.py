"""Checkpoints and final models a job registered (registering one: trainer.spec.ingest.ArtifactRecord)."""

from __future__ import annotations

from pydantic import BaseModel

from server.schemas.common import ReadModel, UtcDatetime


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
