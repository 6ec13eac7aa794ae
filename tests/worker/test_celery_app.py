"""Celery settings that keep a long job from being delivered twice or lost with its worker."""

from __future__ import annotations

from pathlib import Path

from server.config import Settings
from worker.celery_app import VISIBILITY_TIMEOUT_SECONDS, make_celery


def test_tasks_are_acknowledged_late_one_at_a_time_and_not_acked_when_the_worker_dies(tmp_path: Path):
    conf = make_celery(Settings(home=tmp_path, worker_hostname="gpu-7")).conf

    assert conf.task_acks_late is True
    assert conf.task_reject_on_worker_lost is True
    assert conf.worker_prefetch_multiplier == 1
    assert conf.task_ignore_result is True
    assert conf.task_default_queue == "host.gpu-7"


def test_the_embedded_broker_is_sqlite_and_waits_for_its_write_lock(tmp_path: Path):
    app = make_celery(Settings(home=tmp_path))

    assert app.conf.broker_url == f"sqla+sqlite:///{(tmp_path / 'broker.db').resolve()}"
    assert app.conf.broker_transport_options == {"connect_args": {"timeout": 30}}


def test_redis_keeps_a_delivered_task_invisible_longer_than_any_job(tmp_path: Path):
    app = make_celery(Settings(home=tmp_path, broker_url="redis://127.0.0.1:6379/0"))

    assert app.conf.broker_transport_options["visibility_timeout"] == VISIBILITY_TIMEOUT_SECONDS
    assert VISIBILITY_TIMEOUT_SECONDS >= 7 * 24 * 3600
