"""The advisor's request and answer (`POST /api/v1/advise`, `GET /api/v1/advice/{id}`)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from server.schemas.common import FiniteOrNone, UtcDatetime
from trainer.spec.advice import Advice as AdviceAnswer


class AdviseRequest(BaseModel):
    spec: dict[str, Any] = Field(description="the job spec, as for POST /api/v1/jobs")
    memory_budget: str | int | None = Field(
        None, description="per device, e.g. '40GiB', '512MiB' or a byte count; none: every executor fits"
    )
    host_class: Literal["cpu", "cuda"] | None = Field(
        None, description="the device type to probe on (default: the spec's)"
    )


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
    measured_samples_per_s: FiniteOrNone
    predicted_peak_memory_bytes: int | None
    measured_peak_memory_bytes: FiniteOrNone


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
    submitted: list[PredictionCheck] = []
