"""A team's webhooks: made, listed and deleted by the team's admins, seen with their delivery history by every
member (the role rules of server.services.scoping: members see the team, admins manage it). Another team's
webhook is not found, like its jobs."""

from __future__ import annotations

import secrets
import unicodedata
from urllib.parse import urlsplit

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Webhook, WebhookDelivery
from server.schemas.webhooks import (
    AttemptOut,
    DeliveryList,
    DeliveryOut,
    WebhookCreate,
    WebhookCreated,
    WebhookList,
    WebhookOut,
)
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound
from server.services.scoping import ensure_team_admin, ensure_writer, visible_team
from server.services.webhook_payloads import TEST, payload_body
from trainer.spec.destinations import RefusedDestination, check_host, host_address

DELIVERIES_SHOWN = 50


def check_webhook_url(url: str, settings: Settings) -> str:
    """An http(s) URL with a host that the destination rule allows and that is not this platform; raises
    FieldErrors on `url` saying what is allowed."""
    if any(char.isspace() or unicodedata.category(char) == "Cc" for char in url):
        raise FieldErrors.one("url", "control characters and whitespace are not allowed in a URL")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname or not parts.hostname.isascii():
        raise FieldErrors.one("url", f"{url!r} is not an http:// or https:// URL with an ASCII host")
    try:
        port = parts.port or (443 if parts.scheme == "https" else 80)
        check_host(parts.hostname, settings.allow_private_urls)
    except RefusedDestination as exc:
        raise FieldErrors.one("url", str(exc)) from None
    except ValueError as exc:
        raise FieldErrors.one("url", f"{url!r} has no valid port: {exc}") from None
    platform = urlsplit(settings.public_url)
    platform_port = platform.port or (443 if platform.scheme == "https" else 80)
    if port == platform_port and _same_host(parts.hostname, platform.hostname or ""):
        raise FieldErrors.one("url", f"{url!r} is this platform ({settings.public_url}); name the receiver's URL")
    return url


def _same_host(host: str, platform_host: str) -> bool:
    """Whether two URL hosts name the same machine as written: equal, or both this machine (localhost, loopback)."""
    names = [h.rstrip(".").lower().strip("[]") for h in (host, platform_host)]
    return names[0] == names[1] or all(_this_machine(name) for name in names)


def _this_machine(name: str) -> bool:
    address = host_address(name)
    return name == "localhost" or name.endswith(".localhost") or (address is not None and address.is_loopback)


def _out(webhook: Webhook) -> WebhookOut:
    return WebhookOut(id=webhook.id, team_id=webhook.team_id, url=webhook.url, created_at=webhook.created_at)


def _team_webhook(session: Session, team_id: int, webhook_id: int) -> Webhook:
    webhook = session.get(Webhook, webhook_id)
    if webhook is None or webhook.team_id != team_id:
        raise NotFound(f"webhook {webhook_id} not found")
    return webhook


def create_webhook(
    session: Session, caller: Caller, settings: Settings, team_id: int, body: WebhookCreate
) -> WebhookCreated:
    ensure_writer(caller)
    ensure_team_admin(session, caller, team_id)
    url = check_webhook_url(body.url, settings)
    webhook = Webhook(team_id=team_id, url=url, secret=secrets.token_hex(32), created_by=caller.user_id)
    session.add(webhook)
    session.commit()
    return WebhookCreated(**_out(webhook).model_dump(), secret=webhook.secret)


def list_webhooks(session: Session, caller: Caller, team_id: int) -> WebhookList:
    visible_team(session, caller, team_id)
    rows = session.scalars(select(Webhook).where(Webhook.team_id == team_id).order_by(Webhook.id))
    return WebhookList(items=[_out(w) for w in rows])


def delete_webhook(session: Session, caller: Caller, team_id: int, webhook_id: int) -> None:
    ensure_writer(caller)
    visible_team(session, caller, team_id)
    webhook = _team_webhook(session, team_id, webhook_id)
    ensure_team_admin(session, caller, team_id)
    session.delete(webhook)
    session.commit()


def queue_test_delivery(session: Session, caller: Caller, team_id: int, webhook_id: int) -> int:
    """A pending `test` delivery to the webhook, committed; the scheduler process hands it to the workers."""
    ensure_writer(caller)
    team = visible_team(session, caller, team_id)
    webhook = _team_webhook(session, team_id, webhook_id)
    ensure_team_admin(session, caller, team_id)
    text = f"Sfumato: a test delivery to team {team.name}'s webhook {webhook.id}"
    body = payload_body(TEST, team.name, status="test", text=text)
    delivery = WebhookDelivery(webhook_id=webhook.id, event=TEST, body=body)
    session.add(delivery)
    session.commit()
    return delivery.id


def list_deliveries(session: Session, caller: Caller, team_id: int, webhook_id: int) -> DeliveryList:
    """The webhook's latest deliveries, newest first, each with its attempts."""
    visible_team(session, caller, team_id)
    _team_webhook(session, team_id, webhook_id)
    deliveries = session.scalars(
        select(WebhookDelivery)
        .where(WebhookDelivery.webhook_id == webhook_id)
        .order_by(WebhookDelivery.id.desc())
        .limit(DELIVERIES_SHOWN)
    )
    return DeliveryList(
        items=[
            DeliveryOut(
                id=d.id,
                event=d.event,
                state=d.state,
                created_at=d.created_at,
                attempts=[
                    AttemptOut(attempt=a.attempt, at=a.at, status_code=a.status_code, error=a.error) for a in d.attempts
                ],
            )
            for d in deliveries
        ]
    )
