"""Sample images: the gallery rows (the upload form: trainer.spec.ingest.SampleForm)."""

from __future__ import annotations

from pydantic import BaseModel, Field

from server.schemas.common import ReadModel, UtcDatetime


class SampleCreated(BaseModel):
    id: int
    created: bool = Field(description="false when this (attempt, step, kind, prompt, seed) was already stored")


class SampleOut(ReadModel):
    id: int
    attempt: int
    step: int
    kind: str
    prompt: str
    seed: int
    reward: float | None
    width: int
    height: int
    created_at: UtcDatetime
    image_url: str
    current: bool = Field(description="false when a retry resumed at or before this step (its attempt was superseded)")


class SamplePage(BaseModel):
    items: list[SampleOut]
    total: int


class EvalRewards(BaseModel):
    """The mean reward of each eval step's current eval samples."""

    steps: list[int]
    values: list[float]
