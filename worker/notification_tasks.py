"""The webhook delivery task: one attempt per run, retried by Celery after the delay the delivery service gives
(exponential backoff, bounded attempts); each attempt is committed before the next is scheduled."""

from __future__ import annotations

from typing import Any

from server.config import get_settings
from server.db import get_sessionmaker
from server.services.notification_queue import DELIVER_WEBHOOK_TASK, NOTIFICATIONS_QUEUE
from server.services.webhook_delivery import MAX_ATTEMPTS, attempt_delivery
from worker.celery_app import app


@app.task(name=DELIVER_WEBHOOK_TASK, bind=True, max_retries=MAX_ATTEMPTS - 1, queue=NOTIFICATIONS_QUEUE)
def deliver_webhook(self: Any, delivery_id: int) -> str:
    """Attempt the delivery; on a failure that may be retried, run again after its backoff."""
    retry_in = attempt_delivery(get_sessionmaker(), delivery_id, get_settings())
    if retry_in is not None:
        raise self.retry(countdown=retry_in)
    return "done"
