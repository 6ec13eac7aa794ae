"""The server's Prometheus endpoint, `GET /metrics`: jobs by state, the queue and its oldest wait, devices
free and allocated, hosts by status, metric points ingested, and request latency per route.

Job, queue and device numbers and the points stored are read from the database at scrape time, so every
server process and replica reports the same platform-wide values. Request latencies and the server's own
processes are summed over every uvicorn process of this server when it runs with a shared metrics folder
(`server.observability.metrics_dir`, set by `sfumato server`), and are this process's own otherwise.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path

from fastapi import FastAPI, Response
from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, Histogram, generate_latest, values
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.process_collector import ProcessCollector
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from server.models import (
    HOST_STATES,
    JOB_STATES,
    Allocation,
    Device,
    Host,
    HostStatus,
    Job,
    JobStatus,
    MetricBlock,
    utcnow,
)
from server.observability.metrics_dir import METRICS_DIR_ENV, shared_metrics_path
from server.observability.server_processes import ServerProcessesCollector

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


class PlatformCollector(Collector):
    """Gauges computed from the database on every scrape."""

    def __init__(self, factory: sessionmaker[Session]) -> None:
        self.factory = factory

    def collect(self) -> Iterator[Metric]:
        with self.factory() as session:
            jobs = dict(session.execute(select(Job.status, func.count()).group_by(Job.status)).all())
            oldest = session.scalar(select(func.min(Job.created_at)).where(Job.status == JobStatus.QUEUED))
            hosts = dict(session.execute(select(Host.status, func.count()).group_by(Host.status)).all())
            points = session.scalar(select(func.coalesce(func.sum(MetricBlock.n), 0))) or 0
            held = select(Allocation.device_id).where(Allocation.released_at.is_(None))
            allocated = session.execute(
                select(Device.device_type, func.count()).where(Device.id.in_(held)).group_by(Device.device_type)
            ).all()
            free = session.execute(
                select(Device.device_type, func.count())
                .join(Host, Host.id == Device.host_id)
                .where(Host.status == HostStatus.ONLINE, Device.enabled, Device.id.not_in(held))
                .group_by(Device.device_type)
            ).all()
            devices = GaugeMetricFamily("sfumato_devices", "Devices by state and type", labels=["state", "device_type"])
            for state, rows in (("allocated", allocated), ("free", free)):
                for device_type, count in rows:
                    devices.add_metric([state, device_type], count)

        by_state = GaugeMetricFamily("sfumato_jobs", "Jobs by state", labels=["state"])
        for state in JOB_STATES:
            by_state.add_metric([state], jobs.get(state, 0))
        yield by_state
        yield GaugeMetricFamily("sfumato_queue_length", "Jobs waiting for devices", value=jobs.get(JobStatus.QUEUED, 0))
        wait = (utcnow() - oldest).total_seconds() if oldest is not None else 0.0
        yield GaugeMetricFamily(
            "sfumato_queue_oldest_wait_seconds", "How long the oldest queued job has waited", value=max(wait, 0.0)
        )
        by_host_state = GaugeMetricFamily("sfumato_hosts", "Worker hosts by status", labels=["status"])
        for state in HOST_STATES:
            by_host_state.add_metric([state], hosts.get(state, 0))
        yield by_host_state
        yield devices
        yield CounterMetricFamily(
            "sfumato_metric_points_ingested",
            "Metric points stored from trainers (re-sent points are not counted again)",
            value=points,
        )


class RequestLatency:
    """ASGI middleware: a latency histogram per method, route template and status code."""

    def __init__(self, app: ASGIApp, histogram: Histogram) -> None:
        self.app = app
        self.histogram = histogram

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def record_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, record_status)
        finally:
            elapsed = time.perf_counter() - start
            self.histogram.labels(scope["method"], route_template(scope), str(status)).observe(elapsed)


def route_template(scope: Scope) -> str:
    """The matched route's full template (/api/v1/jobs/{job_id}), never the raw path, so the label set stays
    small; "other" when no route matched. A route of an included router knows only its own part of the
    template (/jobs/{job_id}), so the literal prefix before the part its pattern matches is put back."""
    route = scope.get("route")
    template, pattern = getattr(route, "path", None), getattr(route, "path_regex", None)
    if template is None or pattern is None:
        return "other"
    path: str = scope["path"]
    for start in (i for i, char in enumerate(path) if char == "/"):
        if pattern.match(path[start:]):
            return path[:start] + template
    return str(template)


def _request_latency(registry: CollectorRegistry | None) -> Histogram:
    return Histogram(
        "sfumato_http_request_duration_seconds",
        "HTTP request latency by method, route and status",
        ["method", "route", "status"],
        buckets=LATENCY_BUCKETS,
        registry=registry,
    )


def _server_processes(registry: CollectorRegistry | None) -> Gauge:
    # livesum: the processes alive now; a dead one's 1 leaves the sum when its live files are removed.
    return Gauge(
        "sfumato_server_processes", "Server processes serving requests", registry=registry, multiprocess_mode="livesum"
    )


@cache
def _shared_metrics() -> Histogram:
    """This process's latency histogram and its place among the server's processes, made once per process:
    their values live in the shared folder, so two apps of one process would write the same entries."""
    if not getattr(values.ValueClass, "_multiprocess", False):
        raise RuntimeError(f"{METRICS_DIR_ENV} was set after prometheus_client was imported; set it before")
    _server_processes(None).set(1)
    return _request_latency(None)


def _shared_registry(registry: CollectorRegistry, folder: Path) -> Histogram:
    """The scrape sums every process's files in `folder`; the live processes are listed first."""
    latency = _shared_metrics()
    registry.register(ServerProcessesCollector(folder))
    MultiProcessCollector(registry, path=str(folder))
    return latency


def _own_registry(registry: CollectorRegistry) -> Histogram:
    """One process serving alone (tests, `uvicorn --factory` by hand): its own values in its own registry."""
    ProcessCollector(registry=registry)
    _server_processes(registry).set(1)
    return _request_latency(registry)


def install_prometheus(app: FastAPI) -> None:
    """Add `GET /metrics` and the latency middleware; call after `app.state.sessionmaker` is set."""
    registry = CollectorRegistry()
    registry.register(PlatformCollector(app.state.sessionmaker))
    folder = shared_metrics_path()
    latency = _own_registry(registry) if folder is None else _shared_registry(registry, folder)
    app.add_middleware(RequestLatency, histogram=latency)

    @app.get("/metrics", include_in_schema=False)
    def prometheus_metrics() -> Response:
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
