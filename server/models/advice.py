"""An advice: which executor to run a spec with, answered from a probe job on the target host class."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, BigInteger, DateTime, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow


class Advice(Base):
    __tablename__ = "advice"

    id: Mapped[int] = mapped_column(primary_key=True)
    spec: Mapped[dict[str, Any]] = mapped_column(JSON)
    budget_bytes: Mapped[int | None] = mapped_column(BigInteger)
    host_class: Mapped[str] = mapped_column(String(10))  # the device type the probe runs on
    state: Mapped[str] = mapped_column(String(20))  # server.states.AdviceState
    probe: Mapped[dict[str, Any] | None] = mapped_column(JSON)  # the trainer's ProbeReport
    error: Mapped[str | None] = mapped_column(Text)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"), index=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    answered_at: Mapped[datetime | None] = mapped_column(DateTime)
