"""Reward services as the API, the pages, the CLI and the client show them."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from server.schemas.common import UtcDatetime

SERVICE_NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"


class ServiceCreate(BaseModel):
    """POST /api/v1/services. The reward and its weights are checked as a job's reward is (trainer.spec)."""

    name: str = Field(
        pattern=SERVICE_NAME_PATTERN,
        description="unique among the team's live services; jobs name it: {'name': 'service', 'service': NAME}",
    )
    reward: str = Field(max_length=100, description="a built-in reward or a plugin's, as in a job spec")
    path: str | None = Field(None, max_length=500, description="local weights directory (model-based rewards)")
    devices: int = Field(1, ge=1, le=64, description="devices the reward server holds, all on one host")
    device_type: Literal["cuda", "cpu"] | None = Field(
        None,
        description="omitted: the server chooses one that an online host has `devices` of (cuda before cpu); a type "
        "no registered host offers is refused",
    )
    team: str | None = Field(None, max_length=100, description="one of your teams; needed when you have several")


class ServiceFigures(BaseModel):
    """What the reward server's own /metrics say, as services.reward_service_figures computes it."""

    requests: int | None = Field(description="scoring requests since the server (re)started; null if unknown")
    images: int | None = Field(description="images scored since the server (re)started; null if unknown")
    errors: int | None = Field(description="requests that failed since the server (re)started; null if unknown")
    request_rate: float | None = Field(description="requests/s over the last minute of scrapes")
    images_per_s: float | None = Field(description="images/s over the last minute of scrapes")
    latency_p50_s: float | None = Field(description="median request latency, from the latency histogram")
    latency_p99_s: float | None = Field(description="99th percentile request latency, from the latency histogram")
    scraped_at: UtcDatetime | None


class ServiceJob(BaseModel):
    """A queued or running job whose spec names the service."""

    id: int
    name: str
    status: str


class ServiceOut(BaseModel):
    id: int
    name: str
    team: str | None
    reward: str
    path: str | None
    device_type: str
    devices: int
    state: str
    host: str | None
    device_indices: list[int]
    url: str | None
    restarts: int
    wait_reason: str | None
    error: str | None
    last_health_at: UtcDatetime | None
    created_by: str | None
    created_at: UtcDatetime
    started_at: UtcDatetime | None
    stopped_at: UtcDatetime | None
    figures: ServiceFigures
    jobs: list[ServiceJob]


class ServicePage(BaseModel):
    items: list[ServiceOut]
    total: int
    limit: int
    offset: int
