"""Hands a pending webhook delivery to the workers: a Celery task on the notifications queue, which every worker
consumes beside its host's queue. Sent after the delivery's row is committed, so the task always finds it."""

from __future__ import annotations

from functools import cache

from celery import Celery

from server.config import Settings

DELIVER_WEBHOOK_TASK = "worker.deliver_webhook"
NOTIFICATIONS_QUEUE = "notifications"


@cache
def _client(broker_url: str) -> Celery:
    return Celery("sfumato-notifications", broker=broker_url, set_as_current=False)


def send_delivery(settings: Settings, delivery_id: int) -> None:
    """Queue the first attempt of a committed delivery."""
    broker_url = settings.resolved_broker_url()
    if broker_url.startswith(("sqla+sqlite", "sqlalchemy+sqlite")):
        settings.home.mkdir(parents=True, exist_ok=True)
    _client(broker_url).send_task(DELIVER_WEBHOOK_TASK, kwargs={"delivery_id": delivery_id}, queue=NOTIFICATIONS_QUEUE)
