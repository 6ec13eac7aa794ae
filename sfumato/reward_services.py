"""Reward services as the client returns them (GET /api/v1/services). Unknown fields from a newer server are
kept, not refused, as for jobs."""

from __future__ import annotations

from datetime import datetime

from sfumato.models import _Model

LIVE_STATES = ("pending", "starting", "healthy", "unhealthy", "stopping")


class ServiceFigures(_Model):
    """The server's own counters since it (re)started, rates over the last scrape interval, and latency
    percentiles from its histogram, as the server computes them for every reader."""

    requests: int | None = 0
    images: int | None = 0
    errors: int | None = 0
    request_rate: float | None = None
    images_per_s: float | None = None
    latency_p50_s: float | None = None
    latency_p99_s: float | None = None
    scraped_at: datetime | None = None


class ServiceJob(_Model):
    id: int
    name: str
    status: str


class RewardService(_Model):
    id: int
    name: str
    team: str | None = None
    reward: str
    path: str | None = None
    device_type: str
    devices: int
    state: str
    host: str | None = None
    device_indices: list[int] = []
    url: str | None = None
    restarts: int = 0
    wait_reason: str | None = None
    error: str | None = None
    last_health_at: datetime | None = None
    created_by: str | None = None
    created_at: datetime
    started_at: datetime | None = None
    stopped_at: datetime | None = None
    figures: ServiceFigures = ServiceFigures()
    jobs: list[ServiceJob] = []

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES
