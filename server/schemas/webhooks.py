"""Webhooks of a team as the API takes and shows them; the secret appears only in the answer that made it."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class WebhookCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str = Field(
        max_length=2000,
        description="an http(s) URL the platform may call: not the platform itself, never link-local, and loopback "
        "or private only where SFUMATO_ALLOW_PRIVATE_URLS is on",
    )


class WebhookOut(BaseModel):
    id: int
    team_id: int
    url: str
    created_at: datetime


class WebhookCreated(WebhookOut):
    secret: str = Field(description="the HMAC-SHA256 key of X-Sfumato-Signature; shown this once")


class WebhookList(BaseModel):
    items: list[WebhookOut]


class AttemptOut(BaseModel):
    attempt: int
    at: datetime
    status_code: int | None
    error: str | None


class DeliveryOut(BaseModel):
    id: int
    event: str
    state: str
    created_at: datetime
    attempts: list[AttemptOut]


class DeliveryList(BaseModel):
    items: list[DeliveryOut]


class TestQueued(BaseModel):
    delivery_id: int = Field(description="the queued delivery; its attempts appear in the webhook's deliveries")
