"""The advisor's request and answer (`POST /api/v1/advise`, `GET /api/v1/advice/{id}`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from server.schemas.common import FiniteOrNone, UtcDatetime
from trainer.spec.advice import ExecutorPrediction


class AdviseRequest(BaseModel):
    spec: dict[str, Any] = Field(description="the job spec, as for POST /api/v1/jobs")
    memory_budget: str | int | None = Field(
        None, description="per device, e.g. '40GiB', '512MiB' or a byte count; none: every executor fits"
    )
    host_class: Literal["cpu", "cuda"] | None = Field(
        None, description="the device type to probe on (default: the spec's)"
    )


class Bounds(BaseModel):
    """A 95% interval over the probe's rounds, on the log scale (services/statistics.log_interval)."""

    low: float
    high: float


class ExecutorAdvice(ExecutorPrediction):
    """One executor's row of the answer: its prediction, the intervals, whether it fits and its verdict."""

    samples_per_s_interval: Bounds | None = Field(
        None, description="from the rounds' predictions of samples/s; null below 2 rounds"
    )
    speedup_interval: Bounds | None = Field(
        None, description="from the rounds' speedups over native's same round (paired); null below 2 rounds"
    )
    fits_budget: bool = False
    recommended: bool = False
    reason: str = Field(description="the row's verdict in one sentence")


class AdviceAnswer(BaseModel):
    executors: list[ExecutorAdvice]
    recommended: str | None
    fits: bool
    why: str = Field(description="why the recommended executor: its interval clears the next one's, or which overlap")
    summary: str
    budget_bytes: int | None
    trained: int
    samples_per_step: int
    rounds: int = Field(description="the timed rounds each interval comes from (the fewest of the predicted rows)")
    method: str = Field(description="how the intervals are computed and how they decide")


class AdviceSubmit(BaseModel):
    executor: str = Field(max_length=40, description="one of the answer's executors with a prediction")


class PredictionCheck(BaseModel):
    """A job submitted from an advice: what the advice predicted for its executor against what the job measured
    (samples/s and peak memory as the compare answer defines them)."""

    job_id: int
    advice_id: int
    name: str
    status: str
    executor: str
    predicted_samples_per_s: FiniteOrNone
    predicted_samples_per_s_interval: Bounds | None = None
    measured_samples_per_s: FiniteOrNone
    predicted_peak_memory_bytes: int | None
    measured_peak_memory_bytes: FiniteOrNone
    shared_warning: str | None = Field(
        None,
        description="set when the job, or the advice's probe, shared a host with other jobs while it ran: then "
        "measured and predicted are not like with like",
    )


class AdviceOut(BaseModel):
    id: int
    state: str = Field(description="probing, answered or failed")
    spec_name: str
    host_class: str
    budget_bytes: int | None
    probe_job_id: int | None
    probe_job_status: str | None
    created_at: UtcDatetime
    answered_at: UtcDatetime | None
    error: str | None
    answer: AdviceAnswer | None = Field(description="one row per executor; null until the probe has reported")
    probe_warning: str | None = Field(
        None, description="set when the probe job shared a host with other jobs while it ran"
    )
    submitted: list[PredictionCheck] = []
