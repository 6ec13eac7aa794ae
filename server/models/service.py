"""A reward service: a reward server the platform places on a host like a job, and a team's jobs share.

Its devices are held by `allocations` rows with `service_id` set (job_id null), so the one-live-allocation-
per-device index keeps a device from being held by a job and a service at once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, DateTime, ForeignKey, Index, Integer, String, Text, text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, utcnow
from server.states import LIVE_SERVICE_STATES, ServiceState

_LIVE = text("state IN (" + ", ".join(f"'{state.value}'" for state in LIVE_SERVICE_STATES) + ")")


class RewardService(Base):
    __tablename__ = "reward_services"
    __table_args__ = (
        # A name is taken in its team while the service lives; a stopped or failed one frees it.
        Index(
            "uq_reward_services_live_name", "team_id", "name", unique=True, postgresql_where=_LIVE, sqlite_where=_LIVE
        ),
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"), index=True)
    reward: Mapped[str] = mapped_column(String(100))
    path: Mapped[str | None] = mapped_column(String(500))
    device_type: Mapped[str] = mapped_column(String(10))
    devices: Mapped[int] = mapped_column(Integer, default=1)
    state: Mapped[str] = mapped_column(String(20), default=ServiceState.PENDING, index=True)  # a ServiceState
    # Each placement is a new generation (a job's attempt): its allocations carry it, and a worker task of an
    # older generation finds itself stale and does nothing.
    generation: Mapped[int] = mapped_column(Integer, default=0)
    host_id: Mapped[int | None] = mapped_column(ForeignKey("hosts.id", ondelete="SET NULL"))
    url: Mapped[str | None] = mapped_column(String(300))
    stop_requested: Mapped[bool] = mapped_column(default=False)
    restarts: Mapped[int] = mapped_column(Integer, default=0)
    failed_starts: Mapped[int] = mapped_column(Integer, default=0)  # starts in a row that never became healthy
    wait_reason: Mapped[str | None] = mapped_column(String(300))
    error: Mapped[str | None] = mapped_column(Text)
    last_health_at: Mapped[datetime | None] = mapped_column(DateTime)
    # The last scrape of the server's /metrics, and the earlier scrapes of the rate window, oldest first
    # (server.services.reward_service_figures defines and reads them).
    metrics: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    recent_metrics: Mapped[list[dict[str, Any]] | None] = mapped_column(JSON)
    created_by_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    started_at: Mapped[datetime | None] = mapped_column(DateTime)
    stopped_at: Mapped[datetime | None] = mapped_column(DateTime)

    team = relationship("Team")
    host = relationship("Host")
    created_by = relationship("User")
