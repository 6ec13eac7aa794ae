"""One attempt at a webhook delivery, made by a worker task (worker.notification_tasks), and when to try again.

Each attempt POSTs the delivery's stored body through the checked client (server.services.outgoing_http: the
destination rule holds for every address the host resolves to), signed afresh with the attempt's time, and is
written down: time, status code or error, attempt number. A 2xx delivers; anything else is retried after
RETRY_BASE_S * 2**(attempt - 1) seconds, up to MAX_ATTEMPTS attempts, and the delivery then reads failed.
"""

from __future__ import annotations

import time

from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.db import session_scope
from server.models import Webhook, WebhookAttempt, WebhookDelivery, utcnow
from server.services.outgoing_http import post_body
from server.services.webhook_payloads import signed_headers

MAX_ATTEMPTS = 5
RETRY_BASE_S = 10.0  # then 20, 40, 80: a receiver down for a few minutes still gets the event
ATTEMPT_TIMEOUT_S = 5.0  # per phase (connect, write, read)


def retry_delay(attempt: int) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based) before the next one."""
    return RETRY_BASE_S * 2 ** (attempt - 1)


def attempt_delivery(factory: sessionmaker[Session], delivery_id: int, settings: Settings) -> float | None:
    """Make the next attempt of a pending delivery and record it; the seconds to wait before trying again, or None
    when the delivery is over (delivered, failed for good, or gone). The POST runs between two short transactions,
    never inside one: on SQLite a transaction holds the database's write lock."""
    with session_scope(factory) as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None or delivery.state != "pending":
            return None
        webhook = session.get_one(Webhook, delivery.webhook_id)
        url, secret, body, attempt = webhook.url, webhook.secret, delivery.body.encode(), len(delivery.attempts) + 1
    at = utcnow()
    headers = signed_headers(secret, int(time.time()), body)
    status, error = post_body(
        url, body, headers, allow_private=settings.allow_private_urls, timeout_s=ATTEMPT_TIMEOUT_S
    )
    delivered = status is not None and 200 <= status < 300
    with session_scope(factory) as session:
        delivery = session.get(WebhookDelivery, delivery_id)
        if delivery is None:  # its webhook was deleted meanwhile
            return None
        delivery.attempts.append(WebhookAttempt(attempt=attempt, at=at, status_code=status, error=error))
        if delivered or attempt >= MAX_ATTEMPTS:
            delivery.state = "delivered" if delivered else "failed"
            return None
    return retry_delay(attempt)
