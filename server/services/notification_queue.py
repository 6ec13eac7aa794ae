"""Hands pending webhook deliveries to the workers: the scheduler process sends each new one, once, as a Celery
task on the notifications queue, which every worker consumes beside its host's queue. The rows are written in
the unit of work of their event (a job's end, a test button), so no event is lost to a failed send: a row whose
mark is rolled back is sent again on the next pass (at least once; the task ignores a delivery that is over)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.db import session_scope
from server.models import WebhookDelivery, utcnow

log = logging.getLogger(__name__)

DELIVER_WEBHOOK_TASK = "worker.deliver_webhook"
NOTIFICATIONS_QUEUE = "notifications"
SEND_INTERVAL_S = 2.0
SEND_BATCH = 100


def send_pending_deliveries(factory: sessionmaker[Session], send: Callable[[int], None]) -> int:
    """Send every delivery not yet handed to the workers (up to SEND_BATCH) and mark it; how many were sent."""
    with session_scope(factory) as session:
        deliveries = session.scalars(
            select(WebhookDelivery)
            .where(WebhookDelivery.queued_at.is_(None), WebhookDelivery.state == "pending")
            .order_by(WebhookDelivery.id)
            .limit(SEND_BATCH)
        ).all()
        now = utcnow()
        for delivery in deliveries:
            send(delivery.id)
            delivery.queued_at = now
        return len(deliveries)


def run_notification_sender(factory: sessionmaker[Session], send: Callable[[int], None], stop: threading.Event) -> None:
    """The scheduler process's sender: a pass every SEND_INTERVAL_S until `stop`."""
    while not stop.wait(SEND_INTERVAL_S):
        try:
            send_pending_deliveries(factory, send)
        except Exception:  # a database or broker outage: the rows stay pending for the next pass
            log.exception("sending webhook deliveries failed; trying again")
