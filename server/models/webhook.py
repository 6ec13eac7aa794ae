"""A team's webhooks and the deliveries made to them, each attempt kept, so the team page shows what was sent.

A delivery is written pending in the unit of work of the event that caused it, handed to the workers by the
scheduler process (server.services.notification_queue) and made by a worker task (server.services.webhook_delivery),
never inside the request: its attempts are the delivery history.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from server.models.base import Base, utcnow


class Webhook(Base):
    __tablename__ = "webhooks"

    id: Mapped[int] = mapped_column(primary_key=True)
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    url: Mapped[str] = mapped_column(String(2000))
    secret: Mapped[str] = mapped_column(String(64))  # the HMAC key; shown once, when the webhook is made
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"

    id: Mapped[int] = mapped_column(primary_key=True)
    webhook_id: Mapped[int] = mapped_column(ForeignKey("webhooks.id", ondelete="CASCADE"), index=True)
    event: Mapped[str] = mapped_column(String(40))
    body: Mapped[str] = mapped_column(Text)  # the JSON sent, the same bytes on every attempt
    state: Mapped[str] = mapped_column(String(12), default="pending")  # pending, delivered, failed
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    queued_at: Mapped[datetime | None] = mapped_column(DateTime, index=True)  # handed to the workers

    attempts: Mapped[list[WebhookAttempt]] = relationship(
        cascade="all, delete-orphan", order_by="WebhookAttempt.attempt"
    )


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"

    id: Mapped[int] = mapped_column(primary_key=True)
    delivery_id: Mapped[int] = mapped_column(ForeignKey("webhook_deliveries.id", ondelete="CASCADE"), index=True)
    attempt: Mapped[int] = mapped_column(Integer)
    at: Mapped[datetime] = mapped_column(DateTime, default=utcnow)
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(300))
