"""The probe's report: what ``python -m trainer probe`` measured on the target host, sent through the ingest
door (``POST /api/v1/ingest/{job_id}/probe``) and read by the advice arithmetic (trainer/spec/advice.py).

Torch-free (pydantic only): the trainer builds it, the server validates and stores it. Every time is in
seconds of one optimizer step on one rank, every size in bytes.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, Field

from trainer.spec.ingest import Attempt

Exactness = Literal["E0", "E1", "A"]


class MeasuredUnitCosts(BaseModel):
    """One step's forward without grad (F), with grad (F_g), its loss's backward (B), and the decode (D) at one
    row count."""

    rows: int = Field(ge=1)
    forward: float = Field(ge=0)
    forward_grad: float = Field(ge=0)
    backward: float = Field(ge=0)
    decode: float = Field(0.0, ge=0, description="the VAE decode of the rollout's final latents (D)")


MAX_ROUNDS = 64
Seconds = Annotated[float, Field(gt=0, allow_inf_nan=False)]


class ProbePoint(BaseModel):
    """One executor at one reduced size: trained steps K and rows per rank, its step time and step peak.

    ``round_seconds`` is the step time of each timed round, in round order: round r of every executor at this size
    ran back to back (A B C, A B C, …), so the advice pairs them round by round for its intervals. A report
    without them (an earlier probe) is one round of ``step_seconds``."""

    trained: int = Field(ge=1)
    prompts: int = Field(ge=1)
    rows: int = Field(ge=1)
    step_seconds: float = Field(gt=0, description="the median of the timed rounds")
    round_seconds: list[Seconds] = Field(default_factory=list, max_length=MAX_ROUNDS)
    sync_seconds: float = Field(0.0, ge=0)
    peak_bytes: int = Field(ge=0, description="largest live bytes above the step's start")

    def rounds(self) -> list[float]:
        return self.round_seconds or [self.step_seconds]


class ExecutorProbe(BaseModel):
    """One executor's probe; ``error`` says why it has fewer than four points (or none)."""

    name: str
    points: list[ProbePoint] = []
    error: str | None = None
    exactness: Exactness | None = None
    gradient_rel_l2: float | None = Field(None, description="relative L2 distance to native's gradient")
    gradient_cosine: float | None = Field(None, description="cosine with native's gradient")


class ProbeReport(BaseModel):
    """`POST .../probe`: everything the advice needs besides the spec."""

    attempt: Attempt = 1
    device_type: str = Field(max_length=10)
    device_name: str = Field("", max_length=200)
    world_size: int = Field(ge=1)
    unit_costs: list[MeasuredUnitCosts]
    reward_seconds_per_sample: float = Field(ge=0, description="the reward phase of one step, per local sample")
    optimizer_seconds: float = Field(ge=0)
    resident_bytes: int = Field(ge=0, description="held at a step's start: weights, optimizer state, runtime")
    memory_method: str = Field(max_length=300)
    executors: list[ExecutorProbe]
