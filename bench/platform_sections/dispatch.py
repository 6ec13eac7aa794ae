"""Section 3: submit to the job's `running` event on an idle worker."""

from __future__ import annotations

import statistics
import sys
import time
from datetime import UTC

from sqlalchemy import text

from platform_sections.harness import SPEC, Bench, Figure, load_average, percentile
from server.models import TERMINAL_STATES, HostStatus


def start_worker(bench: Bench) -> None:
    host = bench.env["SFUMATO_WORKER_HOSTNAME"]
    bench.start(
        "worker",
        [
            sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--pool", "threads",
            "--concurrency", "2", "--queues", f"host.{host}", "--hostname", f"{host}@%h",
            "--without-gossip", "--without-mingle", "--loglevel", "warning",
        ],
    )  # fmt: skip
    bench.start("scheduler", [sys.executable, "-m", "sfumato.cli", "scheduler"])
    deadline = time.monotonic() + 90
    with bench.client() as http:
        while time.monotonic() < deadline:
            hosts = http.get("/api/v1/hosts").json()["items"]
            if any(h["name"] == host and h["status"] == HostStatus.ONLINE for h in hosts):
                return
            time.sleep(0.3)
    raise RuntimeError("the worker's host did not come online")


def running_event_at(bench: Bench, job_id: int) -> float | None:
    with bench.engine.connect() as conn:
        at = conn.execute(
            text("SELECT min(created_at) FROM job_events WHERE job_id = :id AND status = 'running'"), {"id": job_id}
        ).scalar()
    return None if at is None else at.replace(tzinfo=UTC).timestamp()


def bench_dispatch(bench: Bench, runs: int) -> None:
    print(f"3. dispatch ({runs} jobs one at a time; load {load_average()})")
    start_worker(bench)
    latencies: list[float] = []
    with bench.client() as http:
        for i in range(runs + 1):
            spec = {**SPEC, "name": f"dispatch-{i}", "algorithm": {**SPEC["algorithm"], "total_steps": 1000}}
            posted = time.time()
            response = http.post("/api/v1/jobs", json=spec)
            response.raise_for_status()
            job_id = int(response.json()["id"])
            deadline = time.monotonic() + 60
            running = None
            while running is None and time.monotonic() < deadline:
                time.sleep(0.05)
                running = running_event_at(bench, job_id)
            if running is None:
                raise RuntimeError(f"job {job_id} did not start within 60 s")
            if i > 0:  # the first one warms the worker up
                latencies.append((running - posted) * 1000)
            http.post(f"/api/v1/jobs/{job_id}/cancel").raise_for_status()
            while http.get(f"/api/v1/jobs/{job_id}").json()["status"] not in TERMINAL_STATES:
                time.sleep(0.1)
            time.sleep(1.0)  # the worker is idle again
    p50 = statistics.median(latencies)
    p95 = percentile(latencies, 95)
    note = "POST /api/v1/jobs → the job's `running` event (trainer process started)"
    bench.add(Figure("dispatch", "submit → running, p50", p50, "ms", "≤ 1,000", p50 <= 1000, latencies, note))
    bench.add(Figure("dispatch", "submit → running, p95", p95, "ms", "≤ 2,000", p95 <= 2000, latencies))
