"""One attempt at a webhook delivery, made by a worker task (worker.notification_tasks), and when to try again.

Each attempt POSTs the delivery's stored body through the checked client (server.services.outgoing_http: the
destination rule holds for every address the host resolves to), signed afresh with the attempt's time, and is
written down: time, status code or error, attempt number. A 2xx delivers; anything else is retried after
RETRY_BASE_S * 2**(attempt - 1) seconds, up to MAX_ATTEMPTS attempts, and the delivery then reads failed.
"""

from __future__ import annotations

import time

from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Webhook, WebhookAttempt, WebhookDelivery, utcnow
from server.services.outgoing_http import post_body
from server.services.webhook_payloads import signed_headers

MAX_ATTEMPTS = 5
RETRY_BASE_S = 10.0  # then 20, 40, 80: a receiver down for a few minutes still gets the event
ATTEMPT_TIMEOUT_S = 5.0  # per phase (connect, write, read)


def retry_delay(attempt: int) -> float:
    """Seconds to wait after failed attempt `attempt` (1-based) before the next one."""
    return RETRY_BASE_S * 2 ** (attempt - 1)


def attempt_delivery(session: Session, delivery_id: int, settings: Settings) -> float | None:
    """Make the next attempt of a pending delivery and record it (the caller commits); the seconds to wait before
    trying again, or None when the delivery is over (delivered, failed for good, or gone)."""
    delivery = session.get(WebhookDelivery, delivery_id)
    if delivery is None or delivery.state != "pending":
        return None
    webhook = session.get_one(Webhook, delivery.webhook_id)
    attempt = len(delivery.attempts) + 1
    now = utcnow()
    body = delivery.body.encode()
    headers = signed_headers(webhook.secret, int(time.time()), body)
    status, error = post_body(
        webhook.url, body, headers, allow_private=settings.allow_private_urls, timeout_s=ATTEMPT_TIMEOUT_S
    )
    delivery.attempts.append(WebhookAttempt(attempt=attempt, at=now, status_code=status, error=error))
    if status is not None and 200 <= status < 300:
        delivery.state = "delivered"
        return None
    if attempt >= MAX_ATTEMPTS:
        delivery.state = "failed"
        return None
    return retry_delay(attempt)
