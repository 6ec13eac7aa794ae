"""Metric series out (batches in: trainer.spec.ingest.MetricBatch)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class MetricBatchStored(BaseModel):
    stored: int = Field(description="points newly stored; a re-sent batch stores 0")
    skipped: int = Field(0, description="NaN or infinite values, not stored")


class MetricSeries(BaseModel):
    key: str
    steps: list[int] = Field(description="the shared step axis (identical for every series of a response)")
    values: list[float | None] = Field(
        description="null where this key has no point at that step; downsampled, the bucket's last value"
    )
    wall_times: list[float | None] = Field(description="when each value was reported (seconds since the epoch)")
    minimum: list[float | None] | None = Field(None, description="downsampled only: each bucket's minimum")
    maximum: list[float | None] | None = Field(None, description="downsampled only: each bucket's maximum")


class MetricSeriesSet(BaseModel):
    series: list[MetricSeries]
    bucket_steps: int = Field(
        1, description="steps per bucket: 1 when these are the points themselves, more when downsampled"
    )


class MetricKeys(BaseModel):
    keys: list[str]


class HistoryPoint(BaseModel):
    step: int
    attempt: int
    value: float
    wall_time: float
    current: bool = Field(description="false once a later attempt resumed at or before this step")


class MetricHistory(BaseModel):
    key: str
    points: list[HistoryPoint]
