"""Prometheus: the server's GET /metrics (jobs, queue, devices, ingestion, latency) and the worker's exporter."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path

import httpx
import psutil
import pytest
from client_harness import TinyJobs
from fastapi import FastAPI
from fastapi.testclient import TestClient
from platform_harness import Platform, launch_server
from prometheus_client.parser import text_string_to_metric_families
from sqlalchemy.orm import Session

from server.config import Settings
from server.migrate import upgrade
from server.models import Allocation, Device, Host, Job, utcnow
from server.observability.metrics_dir import FOLDER_PREFIX, remove_dead_servers_folders
from sfumato.app import create_app

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def parse(text: str) -> Samples:
    """{(sample name, sorted labels): value} of an exposition."""
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, tuple(sorted(labels.items())))]


def scrape(platform: Platform) -> Samples:
    return parse(httpx.get(f"{platform.url}/metrics", timeout=30).text)


def health_requests(samples: Samples) -> float:
    labels = {"method": "GET", "route": "/api/v1/health", "status": "200"}
    return value(samples, "sfumato_http_request_duration_seconds_count", **labels)


def _job(name: str, status: str, created_ago_s: float) -> Job:
    return Job(
        name=name,
        spec={},
        status=status,
        algorithm="flow_grpo",
        executor="native",
        model_family="sd3",
        device_type="cpu",
        devices=1,
        created_at=utcnow() - timedelta(seconds=created_ago_s),
    )


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    url = f"sqlite:///{tmp_path / 'sfumato.db'}"
    upgrade(url)
    return create_app(Settings(home=tmp_path, database_url=url))


def test_request_latency_is_labelled_by_route_template_and_status_never_the_raw_path(app: FastAPI) -> None:
    with TestClient(app) as http:
        for path in ("/api/v1/jobs/3", "/api/v1/jobs/4", "/api/v1/health", "/no/such/page"):
            http.get(path)
        samples = parse(http.get("/metrics").text)
    count = "sfumato_http_request_duration_seconds_count"
    assert value(samples, count, method="GET", route="/api/v1/jobs/{job_id}", status="401") == 2
    assert value(samples, count, method="GET", route="/api/v1/health", status="200") == 1
    assert value(samples, count, method="GET", route="other", status="404") == 1
    assert not [key for key in samples if "/api/v1/jobs/3" in str(key)]


def test_queue_length_oldest_wait_and_devices_come_from_the_database(app: FastAPI) -> None:
    with TestClient(app) as http, app.state.sessionmaker() as session:
        _add_platform_rows(session)
        samples = parse(http.get("/metrics").text)
    assert value(samples, "sfumato_queue_length") == 2
    assert 90 <= value(samples, "sfumato_queue_oldest_wait_seconds") < 120
    assert value(samples, "sfumato_jobs", state="queued") == 2
    assert value(samples, "sfumato_jobs", state="running") == 1
    assert value(samples, "sfumato_jobs", state="failed") == 0
    assert value(samples, "sfumato_devices", state="allocated", device_type="cuda") == 1
    # Free: enabled devices on online hosts; the disabled one and the lost host's are not.
    assert value(samples, "sfumato_devices", state="free", device_type="cuda") == 1
    assert value(samples, "sfumato_hosts", status="online") == 1
    assert value(samples, "sfumato_hosts", status="lost") == 1


def _add_platform_rows(session: Session) -> None:
    running = _job("running", "running", 300)
    session.add_all([_job("old", "queued", 90), _job("new", "queued", 5), running])
    online = Host(name="gpu-a", queue="host.gpu-a", status="online")
    lost = Host(name="gpu-b", queue="host.gpu-b", status="lost")
    session.add_all([online, lost])
    session.flush()
    devices = [
        Device(host_id=online.id, index=0, device_type="cuda", model="H100"),
        Device(host_id=online.id, index=1, device_type="cuda", model="H100"),
        Device(host_id=online.id, index=2, device_type="cuda", model="H100", enabled=False),
        Device(host_id=lost.id, index=0, device_type="cuda", model="H100"),
    ]
    session.add_all(devices)
    session.flush()
    session.add(Allocation(job_id=running.id, attempt=1, device_id=devices[0].id, host_id=online.id))
    session.commit()


@pytest.mark.postgres
@pytest.mark.slow
def test_server_metrics_count_finished_jobs_ingested_points_and_request_latency(
    live_platform: Platform, tiny_jobs: TinyJobs
) -> None:
    with live_platform.client() as http:
        http.get(f"/api/v1/jobs/{tiny_jobs.native_id}")
        points = len(http.get(f"/api/v1/jobs/{tiny_jobs.native_id}/metrics/keys").json()["keys"])
        samples = parse(httpx.get(f"{live_platform.url}/metrics").text)
    assert value(samples, "sfumato_jobs", state="succeeded") >= 2
    assert value(samples, "sfumato_devices", state="free", device_type="cpu") >= 1
    # Two jobs, three steps, every key of each step: at least the native job's points arrived here.
    assert value(samples, "sfumato_metric_points_ingested_total") >= 3 * points
    job_route = ("GET", "/api/v1/jobs/{job_id}", "200")
    labels = dict(zip(("method", "route", "status"), job_route, strict=True))
    assert value(samples, "sfumato_http_request_duration_seconds_count", **labels) >= 1
    ingest = {"method": "POST", "route": "/api/v1/ingest/{job_id}/metrics", "status": "200"}
    assert value(samples, "sfumato_http_request_duration_seconds_count", **ingest) >= 1


@pytest.mark.postgres
@pytest.mark.slow
def test_the_worker_exports_its_finished_job_runs_and_devices(live_platform: Platform, tiny_jobs: TinyJobs) -> None:
    text = httpx.get(f"http://127.0.0.1:{live_platform.worker_metrics_port}/metrics").text
    samples = parse(text)
    assert value(samples, "sfumato_worker_job_runs_total", result="succeeded") >= 2
    assert value(samples, "sfumato_worker_job_run_seconds_count") >= 2
    devices = sum(v for (name, _), v in samples.items() if name == "sfumato_worker_devices")
    assert devices == 3
    assert "process_resident_memory_bytes" in text


@pytest.fixture
def two_process_server(tmp_path: Path) -> Iterator[Platform]:
    server = launch_server(tmp_path, processes=2)
    yield server
    server.stop()


def served_by(server: Platform, marker: str) -> list[int]:
    """The process of every access-log line of a request whose path names `marker`."""
    log = (server.logs / "server.log").read_text(errors="replace")
    return [int(pid) for pid in re.findall(rf'\[(\d+)\] \S+ - "GET [^"]*{marker}', log)]


def spread_health_requests(server: Platform, marker: str) -> int:
    """Health requests, eight at a time on fresh connections, until the access log shows that two processes
    served them; returns how many were made."""
    sent = 0

    def get(n: int) -> int:
        return httpx.get(f"{server.url}/api/v1/health?{marker}={n}", timeout=30).status_code

    def eight_more_reach_two_processes() -> bool:
        nonlocal sent
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(get, range(sent, sent + 8)))
        assert codes == [200] * 8
        sent += 8
        return len(set(served_by(server, marker))) >= 2

    server.wait_for("requests served by both server processes", eight_more_reach_two_processes, timeout=60)
    assert len(served_by(server, marker)) == sent
    return sent


@pytest.mark.slow
def test_every_scrape_counts_the_requests_of_every_server_process(two_process_server: Platform) -> None:
    sent = spread_health_requests(two_process_server, "probe")

    two_process_server.wait_for(
        f"a scrape to count all {sent} requests", lambda: health_requests(scrape(two_process_server)) == sent
    )
    assert [health_requests(scrape(two_process_server)) for _ in range(10)] == [sent] * 10


def rss_pids(samples: Samples) -> set[int]:
    return {int(dict(labels)["pid"]) for (name, labels) in samples if name == "process_resident_memory_bytes"}


@pytest.mark.slow
def test_live_gauges_count_living_server_processes_and_a_killed_one_keeps_its_requests_counted(
    two_process_server: Platform,
) -> None:
    sent = spread_health_requests(two_process_server, "probe")
    serving = set(served_by(two_process_server, "probe"))
    samples = scrape(two_process_server)
    assert value(samples, "sfumato_server_processes") == 2
    assert rss_pids(samples) == serving
    killed = psutil.Process(min(serving))

    killed.kill()

    def replaced() -> Samples | None:
        samples = scrape(two_process_server)
        pids = rss_pids(samples)
        return samples if len(pids) == 2 and killed.pid not in pids else None

    samples = two_process_server.wait_for("uvicorn to replace the killed process", replaced)
    assert value(samples, "sfumato_server_processes") == 2
    assert health_requests(samples) == sent


def test_a_server_starting_removes_the_metrics_folders_of_killed_servers_and_keeps_the_living_ones(
    tmp_path: Path,
) -> None:
    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    killed = tmp_path / f"{FOLDER_PREFIX}{int(ended.stdout)}-abc123"
    living = tmp_path / f"{FOLDER_PREFIX}{os.getpid()}-def456"
    for folder in (killed, living):
        folder.mkdir()
        (folder / "histogram_1.db").write_bytes(b"")

    remove_dead_servers_folders(tmp_path)

    assert (killed.exists(), living.exists()) == (False, True)
