"""The worker's own Prometheus exporter: an HTTP endpoint in the worker process (where: `worker.exporter_port`)
with the job runs it is supervising, how they ended and took, its devices, and the process's CPU and memory.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from celery.signals import task_postrun, task_prerun
from prometheus_client import REGISTRY, Counter, Gauge, Histogram, start_http_server

from server.services.hosts import DeviceInfo
from worker.exporter_port import ExporterSettings

log = logging.getLogger(__name__)

RUN_JOB_TASK = "worker.run_job"


RUNNING = Gauge("sfumato_worker_job_runs_running", "Job runs (one node of one attempt) supervised now")
FINISHED = Counter("sfumato_worker_job_runs", "Job runs ended, by the job's status afterwards", ["result"])
DURATION = Histogram(
    "sfumato_worker_job_run_seconds",
    "Wall time of a job run, from task start to the trainer's exit",
    buckets=(10, 30, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 48 * 3600),
)
DEVICES = Gauge("sfumato_worker_devices", "Devices this worker advertises", ["device_type", "model"])

_started: dict[str, float] = {}


def _run_started(task_id: str | None = None, task: Any = None, **_: Any) -> None:
    if task is not None and task.name == RUN_JOB_TASK and task_id:
        _started[task_id] = time.monotonic()
        RUNNING.inc()


def _run_ended(task_id: str | None = None, task: Any = None, retval: Any = None, **_: Any) -> None:
    if task is None or task.name != RUN_JOB_TASK or not task_id or task_id not in _started:
        return
    DURATION.observe(time.monotonic() - _started.pop(task_id))
    RUNNING.dec()
    FINISHED.labels(retval if isinstance(retval, str) else "error").inc()


def start_exporter(devices: list[DeviceInfo]) -> None:
    """Serve the default registry over HTTP from a daemon thread; a port in use is logged, not fatal."""
    settings = ExporterSettings()
    for device in devices:
        DEVICES.labels(device.device_type, device.model).inc()
    task_prerun.connect(_run_started, weak=False, dispatch_uid="sfumato-exporter-prerun")
    task_postrun.connect(_run_ended, weak=False, dispatch_uid="sfumato-exporter-postrun")
    if settings.port == 0:
        return
    for port in settings.candidate_ports():
        try:
            server, _ = start_http_server(port, settings.address, registry=REGISTRY)
        except OSError as exc:
            log.warning("worker metrics exporter not started on %s:%s: %s", settings.address, port, exc)
            continue
        log.info("worker metrics at http://%s:%s/metrics", settings.address, server.server_port)
        return
    log.warning("worker metrics are not exported: set SFUMATO_WORKER_METRICS_PORT to a free port")
