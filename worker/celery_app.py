"""The Celery application: broker from settings, one queue per host, and late acknowledgement.

The database is the source of truth, so there is no result backend. A job task is acknowledged
only when it returns (`task_acks_late`), a task whose worker process dies is not acknowledged
(`task_reject_on_worker_lost`), a worker holds no more than the task it runs
(`worker_prefetch_multiplier=1`), and on Redis a delivered task stays invisible to other workers
for longer than any job runs, so a long job is never delivered twice while it runs. A task that is
delivered again anyway (a restarted worker, a restored message) finds its attempt no longer
current in the database and does nothing.

The embedded default broker is kombu's SQLAlchemy transport on a SQLite file (no server).
"""

from __future__ import annotations

from typing import Any

from celery import Celery
from celery.signals import celeryd_after_setup, worker_init, worker_shutting_down

from server.config import Settings, get_settings
from server.services.hosts import host_queue
from worker.exporter import start_exporter
from worker.host_agent import SHUTDOWN, HostAgent, host_name

# Longer than any job may run: Redis redelivers an unacknowledged task only after this.
VISIBILITY_TIMEOUT_SECONDS = 30 * 24 * 3600


def broker_transport_options(broker_url: str) -> dict[str, Any]:
    if broker_url.startswith(("redis://", "rediss://", "redis+socket://")):
        return {"visibility_timeout": VISIBILITY_TIMEOUT_SECONDS}
    if broker_url.startswith(("sqla+sqlite", "sqlalchemy+sqlite")):
        return {"connect_args": {"timeout": 30}}  # wait for the file's write lock instead of failing
    return {}


def make_celery(settings: Settings) -> Celery:
    broker_url = settings.resolved_broker_url()
    if broker_url.startswith(("sqla+sqlite", "sqlalchemy+sqlite")):
        settings.home.mkdir(parents=True, exist_ok=True)
    app = Celery("sfumato", broker=broker_url, include=["worker.tasks", "worker.notification_tasks"])
    app.conf.update(
        broker_transport_options=broker_transport_options(broker_url),
        broker_connection_retry_on_startup=True,
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        task_ignore_result=True,
        task_serializer="json",
        accept_content=["json"],
        # A bare `celery -A worker.celery_app worker` consumes this host's queue.
        task_default_queue=host_queue(host_name(settings)),
        worker_send_task_events=False,
    )
    return app


app = make_celery(get_settings())
_agent: HostAgent | None = None


@worker_init.connect
def _start_host_agent(**_: Any) -> None:
    """Register the host before the worker consumes anything, then heartbeat."""
    global _agent
    SHUTDOWN.clear()
    _agent = HostAgent(get_settings())
    _agent.start()


@celeryd_after_setup.connect
def _start_exporter(**_: Any) -> None:
    """After the worker set up its logging, so the line that says where the exporter listens is seen."""
    if _agent is not None:
        start_exporter(_agent.devices)


@worker_shutting_down.connect
def _stop_running_jobs(**_: Any) -> None:
    SHUTDOWN.set()
    if _agent is not None:
        _agent.stop()
