"""Sample images: the upload form and the gallery rows."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from server.schemas.common import Attempt, FiniteOrNone, ReadModel, Step, UtcDatetime

SampleKind = Literal["eval", "train"]


class SampleForm(BaseModel):
    attempt: Attempt
    step: Step
    kind: SampleKind = "eval"
    prompt: str = Field(max_length=10_000)
    seed: int = Field(ge=-(2**63), le=2**63 - 1)
    reward: FiniteOrNone = None


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
