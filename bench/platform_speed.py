"""``make bench-platform``: the platform's speed against its targets, on PostgreSQL and Redis.

Creates a fresh PostgreSQL database (dropped at the end), migrates it, and starts the real server
(`python -m sfumato.cli server`: uvicorn, uvloop, orjson) as a subprocess; later the Celery worker
(threads pool) and the scheduler, both on Redis. Then it measures, each figure the median of
several runs:

1. ingestion: 1, 4 and 16 trainers (asyncio httpx clients, one job each) post batches of 100
   steps x 50 keys over HTTP for a few seconds; every 4th batch is sent twice (an idempotent
   re-send), and the re-sends' latency is compared with first sends';
2. reads: a job with 10,000,000 points (50 keys x 200,000 steps, generated in the database),
   5 keys (1,000,000 points) to 2,000 buckets per key (min/max/last, max_points=30,000), the
   same at a chart's width (max_points=2,000), and the compare figure: 8 jobs x 4 keys, one
   request per job, one after the other;
3. dispatch: POST /api/v1/jobs to the job's `running` event (the worker has started the
   trainer process), on an idle worker, scheduler at its default interval;
4. reporting: the tiny model's step time with the trainer's reporter on and off (50 keys per
   step, progress, a sample every 10 reporting steps), on a random half of the steps of one run,
   beside the reporter's own CPU time (its calls and its thread) as a share of the steps' time;
5. API under load: GET /api/v1/jobs and the job page (/jobs/{id}, HTML) alternately, open loop
   at 200 requests/s from raw asyncio keep-alive connections on loopback; latency counts from each
   request's scheduled start, so a slow server cannot slow the generator down. When that misses,
   the highest of a few lower rates (150, 100, 75, 50/s) served within the target is reported too.

Prints a table, writes bench/results/platform.md and platform.json. Asserts nothing.

    SFUMATO_BENCH_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/postgres \
    SFUMATO_BENCH_REDIS_URL=redis://127.0.0.1:6379/0 .venv/bin/python bench/platform_speed.py
"""

# ruff: noqa: E402 - the project imports follow the sys.path line below
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import re
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx
import numpy as np
import orjson
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from server.config import Settings
from server.db import make_engine, scratch_postgres_database
from server.migrate import upgrade
from server.models import Job
from server.services import metric_blocks
from server.services.auth import ensure_admin
from server.services.current_points import record_first_step
from server.services.tokens import JOB_TOKEN_PREFIX, hash_token, new_token
from tests.platform_harness import start_process, stop_processes

DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/0"
RESULTS = REPO / "bench" / "results"
SPEC = json.loads((REPO / "examples" / "tiny-native.json").read_text())

KEYS = 50
BATCH_STEPS = 100  # a trainer's batch: 100 steps x 50 keys = 5,000 points
RESEND_EVERY = 4
LONG_KEYS, LONG_STEPS = 5, 1_000_000  # the big job: 5 keys of 1,000,000 points ...
BIG_STEPS = 111_112  # ... and 45 of 111,112: 10,000,000 points across 50 keys
COMPARE_KEYS = 4
COMPARE_STEPS = 200_000  # the 7 other compared jobs: 4 keys x 200,000 steps
BUCKETS = 2_000
MAX_IN_FLIGHT = 200  # open requests of the load generator (1 s at 200/s)
CALIBRATION_RATE, CALIBRATION_SECONDS = 20.0, 5.0  # each request alone, well below saturation: its CPU cost
CAPACITY_FRACTIONS, CAPACITY_SECONDS = (0.75, 0.5, 0.375, 0.25), 20.0  # of the target rate, when it is missed


@dataclass
class Figure:
    section: str
    name: str
    value: float
    unit: str
    target: str
    meets: bool | None
    runs: list[float] = field(default_factory=list)
    note: str = ""


@dataclass
class Bench:
    url: str
    token: str
    database_url: str
    engine: Engine
    home: Path
    env: dict[str, str]
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)
    figures: list[Figure] = field(default_factory=list)

    def start(self, name: str, argv: list[str]) -> None:
        self.procs[name] = start_process(argv, self.env, self.home / f"{name}.log")

    def stop(self) -> None:
        stop_processes(self.procs.values(), grace_seconds=30)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=60)

    def add(self, figure: Figure) -> None:
        self.figures.append(figure)
        verdict = {True: "meets", False: "MISSES", None: "-"}[figure.meets]
        print(f"  {figure.name}: {figure.value:,.1f} {figure.unit} (target {figure.target}) {verdict} {figure.note}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def load_average() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def wait_http(url: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url, timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout:g} s")


def submit(bench: Bench, name: str, total_steps: int = 10) -> int:
    spec = {**SPEC, "name": name, "algorithm": {**SPEC["algorithm"], "total_steps": total_steps}}
    with bench.client() as http:
        response = http.post("/api/v1/jobs", json=spec)
    response.raise_for_status()
    return int(response.json()["id"])


def running_job(bench: Bench, name: str) -> tuple[int, str]:
    """A job as a trainer sees it: `running`, with a job token (set in the database, no worker involved)."""
    job_id = submit(bench, name)
    raw = new_token(JOB_TOKEN_PREFIX)
    with Session(bench.engine) as session:
        job = session.get_one(Job, job_id)
        job.status, job.attempt, job.token_hash = "running", 1, hash_token(raw)
        session.commit()
    return job_id, raw


def finish_jobs(bench: Bench, job_ids: list[int]) -> None:
    with Session(bench.engine) as session:
        for job_id in job_ids:
            job = session.get_one(Job, job_id)
            job.status, job.token_hash, job.attempt = "succeeded", None, max(job.attempt, 1)
        session.commit()


def key_names(count: int) -> list[str]:
    fixed = ["reward/mean", "reward/std", "loss", "kl", "clip_frac", "grad_norm", "time/step", "memory/peak_bytes"]
    return (fixed + [f"executor/metric_{i:02d}" for i in range(count)])[:count]


# --- 1. ingestion ------------------------------------------------------------------------------------


def batch_body(attempt: int, first_step: int, keys: list[str], rng: random.Random) -> bytes:
    now = time.time()
    steps = [
        {"step": s, "wall_time": now, "values": {k: rng.random() for k in keys}}
        for s in range(first_step, first_step + BATCH_STEPS)
    ]
    return orjson.dumps({"attempt": attempt, "steps": steps})


async def trainer_client(url: str, job_id: int, token: str, seconds: float, first_step: int) -> dict[str, Any]:
    """One trainer posting batches back to back; every RESEND_EVERY-th batch is sent a second time."""
    keys = key_names(KEYS)
    rng = random.Random(job_id)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    stored = 0
    first_sends: list[float] = []
    resends: list[float] = []
    restored = 0
    errors = 0
    sent = 0
    step = first_step
    async with httpx.AsyncClient(base_url=url, headers=headers, timeout=60) as http:
        deadline = time.perf_counter() + seconds
        while time.perf_counter() < deadline:
            sent += 1
            body = batch_body(1, step, keys, rng)
            step += BATCH_STEPS
            sends = 2 if sent % RESEND_EVERY == 0 else 1
            for n in range(sends):
                started = time.perf_counter()
                response = await http.post(f"/api/v1/ingest/{job_id}/metrics", content=body)
                elapsed = time.perf_counter() - started
                if response.status_code != 200:
                    errors += 1
                    continue
                if n == 0:
                    stored += response.json()["stored"]
                    first_sends.append(elapsed)
                else:
                    restored += response.json()["stored"]
                    resends.append(elapsed)
    return {
        "stored": stored,
        "first": first_sends,
        "resend": resends,
        "restored": restored,
        "errors": errors,
        "next_step": step,
    }


def bench_ingestion(bench: Bench, clients: list[int], runs: int, seconds: float) -> None:
    print(f"1. ingestion ({runs} runs of {seconds:g} s per level; load {load_average()})")
    jobs = [running_job(bench, f"ingest-{i}") for i in range(max(clients))]
    next_step = dict.fromkeys((job_id for job_id, _ in jobs), 0)
    # Warm-up: connections, plans, the server's first requests.
    asyncio.run(_ingest_round(bench.url, jobs[:2], 1.0, next_step))
    for count in clients:
        cpu_before = platform_cpu(bench)
        stored_total = 0
        rates: list[float] = []
        first: list[float] = []
        resend: list[float] = []
        restored = errors = 0
        for _ in range(runs):
            started = time.perf_counter()
            results = asyncio.run(_ingest_round(bench.url, jobs[:count], seconds, next_step))
            elapsed = time.perf_counter() - started
            rates.append(sum(r["stored"] for r in results) / elapsed)
            stored_total += sum(r["stored"] for r in results)
            first += [t for r in results for t in r["first"]]
            resend += [t for r in results for t in r["resend"]]
            restored += sum(r["restored"] for r in results)
            errors += sum(r["errors"] for r in results)
        median_first = statistics.median(first) * 1000
        median_resend = statistics.median(resend) * 1000 if resend else math.nan
        cpu_per_point = cpu_since(bench, cpu_before) / max(1, stored_total)
        note = (
            f"batch {BATCH_STEPS * KEYS:,} points: first send {median_first:.0f} ms, re-send {median_resend:.0f} ms "
            f"(median), re-sends stored {restored}, errors {errors}; server + PostgreSQL CPU "
            f"{cpu_per_point * 1e6:.1f} µs/point, i.e. at most {(os.cpu_count() or 1) / cpu_per_point:,.0f} points/s "
            "with every core free"
        )
        bench.add(
            Figure(
                "ingestion",
                f"{count} client{'s' if count > 1 else ''}: points stored/s",
                statistics.median(rates),
                "points/s",
                "≥ 250,000",
                statistics.median(rates) >= 250_000 and errors == 0,
                rates,
                note,
            )
        )
        bench.add(
            Figure(
                "ingestion",
                f"{count} client{'s' if count > 1 else ''}: re-send / first-send latency",
                median_resend / median_first,
                "x",
                "≤ 1.0",
                median_resend <= median_first and restored == 0,
                [],
                "",
            )
        )
    finish_jobs(bench, [job_id for job_id, _ in jobs])


def platform_cpu(bench: Bench) -> dict[int, float]:
    """CPU seconds used so far by the server's processes and each PostgreSQL backend serving the bench database."""
    with bench.engine.connect() as conn:
        pids = list(conn.execute(text("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")).scalars())
    return {pid: process_cpu_seconds(pid) for pid in [*server_pids(bench), *pids]}


def cpu_since(bench: Bench, before: dict[int, float]) -> float:
    """CPU seconds since `before` (a backend that closed in between is not counted)."""
    return sum(cpu - before.get(pid, 0.0) for pid, cpu in platform_cpu(bench).items())


def process_cpu_seconds(pid: int, thread: int | None = None) -> float:
    """utime + stime of a process (or one of its threads) from /proc; 0 when it has ended."""
    stat = Path(f"/proc/{pid}/stat" if thread is None else f"/proc/{pid}/task/{thread}/stat")
    try:
        fields = stat.read_text().rsplit(")", 1)[1].split()
    except OSError:  # the process ended (a backend whose connection closed)
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _ingest_round(
    url: str, jobs: list[tuple[int, str]], seconds: float, next_step: dict[int, int]
) -> list[dict[str, Any]]:
    results = await asyncio.gather(
        *(trainer_client(url, job_id, token, seconds, next_step[job_id]) for job_id, token in jobs)
    )
    for (job_id, _), result in zip(jobs, results, strict=True):
        next_step[job_id] = result["next_step"]
    return list(results)


# --- 2. reads ----------------------------------------------------------------------------------------


def bulk_load(bench: Bench, loads: list[tuple[int, list[str], int]]) -> None:
    """Points per (job, keys, steps) stored through the ingestion service's block writer in 100,000-step
    batches: a trending noisy curve with one spike up and one down per key, so there are extremes to keep."""
    rng = np.random.default_rng(7)
    with Session(bench.engine) as session:
        for job_id, keys, steps in loads:
            for index, key in enumerate(keys):
                for first in range(0, steps, 100_000):
                    points = np.empty(min(100_000, steps - first), dtype=metric_blocks.POINT)
                    points["step"] = np.arange(first, first + len(points))
                    points["value"] = np.sin(points["step"] / 5000.0 + index) + rng.random(len(points)) * 0.1
                    points["wall"] = 1.7e9 + points["step"]
                    for spike, value in (((index * 7919) % steps, 1000.0), ((index * 104729) % steps, -1000.0)):
                        points["value"][points["step"] == spike] = value
                    record_first_step(session, job_id, 1, first)
                    metric_blocks.store(session, job_id, 1, metric_blocks.BatchPoints({key: points}))
                    session.commit()
    with bench.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE metric_blocks"))  # what autovacuum does soon after a bulk load


def timed_get(http: httpx.Client, path: str, runs: int) -> tuple[list[float], int]:
    http.get(path).raise_for_status()  # warm-up
    times: list[float] = []
    size = 0
    for _ in range(runs):
        started = time.perf_counter()
        response = http.get(path)
        times.append((time.perf_counter() - started) * 1000)
        response.raise_for_status()
        size = len(response.content)
    return times, size


async def _all_at_once(bench: Bench, paths: list[str]) -> float:
    """Milliseconds until every one of `paths` has answered, all sent at once (the compare page's fetches)."""
    headers = {"Authorization": f"Bearer {bench.token}"}
    async with httpx.AsyncClient(base_url=bench.url, headers=headers, timeout=60) as http:
        await http.get(paths[0])  # a connection, warm
        started = time.perf_counter()
        responses = await asyncio.gather(*(http.get(path) for path in paths))
        elapsed = (time.perf_counter() - started) * 1000
    for response in responses:
        response.raise_for_status()
    return elapsed


def bench_reads(bench: Bench, runs: int, long_steps: int, big_steps: int, compare_steps: int) -> int:
    keys = key_names(KEYS)
    big = submit(bench, "big-10M")
    others = [submit(bench, f"compare-{i}") for i in range(7)]
    finish_jobs(bench, [big, *others])
    started = time.perf_counter()
    loads = [(big, keys[:LONG_KEYS], long_steps), (big, keys[LONG_KEYS:], big_steps)]
    bulk_load(bench, loads + [(job_id, keys[:COMPARE_KEYS], compare_steps) for job_id in others])
    total = LONG_KEYS * long_steps + (KEYS - LONG_KEYS) * big_steps
    loaded = total + 7 * COMPARE_KEYS * compare_steps
    seconds = time.perf_counter() - started
    print(f"2. reads (loaded {loaded:,} points in {seconds:.0f} s, {loaded / seconds:,.0f}/s; load {load_average()})")
    with bench.client() as http:
        times, size = timed_get(http, f"/api/v1/jobs/{big}/metrics?keys={keys[0]}&max_points={BUCKETS}", runs)
        bench.add(
            Figure(
                "reads",
                f"{long_steps:,} points → {BUCKETS:,} buckets (min/max/last)",
                statistics.median(times),
                "ms",
                "≤ 50",
                statistics.median(times) <= 50,
                times,
                f"one key of a {total:,}-point job with {KEYS} keys, response {size / 1024:.0f} KiB",
            )
        )
        long_keys = ",".join(keys[:LONG_KEYS])
        times, size = timed_get(http, f"/api/v1/jobs/{big}/metrics?keys={long_keys}&max_points={BUCKETS}", runs)
        bench.add(
            Figure(
                "reads",
                f"{LONG_KEYS} x {long_steps:,} points → {BUCKETS:,} buckets each",
                statistics.median(times),
                "ms",
                "-",
                None,
                times,
                f"{LONG_KEYS} keys on one step axis, response {size / 1024:.0f} KiB",
            )
        )
        compare_keys = ",".join(keys[:COMPARE_KEYS])
        paths = [f"/api/v1/jobs/{job_id}/metrics?keys={compare_keys}&max_points=1000" for job_id in [big, *others]]
        points = f"{COMPARE_KEYS * long_steps:,} + 7 x {COMPARE_KEYS * compare_steps:,} points, max_points=1000"
        at_once = [asyncio.run(_all_at_once(bench, paths)) for _ in range(runs + 1)][1:]
        bench.add(
            Figure(
                "reads",
                "compare: 8 jobs x 4 keys (8 requests at once, as the page sends them)",
                statistics.median(at_once),
                "ms",
                "≤ 200",
                statistics.median(at_once) <= 200,
                at_once,
                points,
            )
        )
        in_a_row: list[float] = []
        for _ in range(runs + 1):
            started = time.perf_counter()
            for path in paths:
                http.get(path).raise_for_status()
            in_a_row.append((time.perf_counter() - started) * 1000)
        in_a_row = in_a_row[1:]
        bench.add(
            Figure(
                "reads",
                "compare: 8 jobs x 4 keys (8 requests in a row)",
                statistics.median(in_a_row),
                "ms",
                "-",
                None,
                in_a_row,
                points,
            )
        )
        times, _ = timed_get(http, f"/api/v1/jobs/{big}/metrics/keys", runs)
        bench.add(
            Figure(
                "reads",
                "metric keys of the 10M-point job",
                statistics.median(times),
                "ms",
                "-",
                None,
                times,
            )
        )
    return big


# --- 3. dispatch ---------------------------------------------------------------------------------------


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
            if any(h["name"] == host and h["status"] == "online" for h in hosts):
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
            while http.get(f"/api/v1/jobs/{job_id}").json()["status"] not in ("cancelled", "failed", "succeeded"):
                time.sleep(0.1)
            time.sleep(1.0)  # the worker is idle again
    p50 = statistics.median(latencies)
    p95 = percentile(latencies, 95)
    note = "POST /api/v1/jobs → the job's `running` event (trainer process started)"
    bench.add(Figure("dispatch", "submit → running, p50", p50, "ms", "≤ 1,000", p50 <= 1000, latencies, note))
    bench.add(Figure("dispatch", "submit → running, p95", p95, "ms", "≤ 2,000", p95 <= 2000, latencies))


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]


# --- 4. reporting overhead --------------------------------------------------------------------------

BLOCK_STEPS = 4  # steps in a row with the reporter on, or off
WARMUP_STEPS = 8  # reporter on: its connection, the server's first requests; not measured


def bench_reporting(bench: Bench, steps: int) -> None:
    print(f"4. reporting overhead ({steps} steps; load {load_average()})")
    job_id, token = running_job(bench, "reporting")
    out = bench.home / "reporting.json"
    env = {
        **bench.env,
        "SFUMATO_API_URL": bench.url,
        "SFUMATO_JOB_ID": str(job_id),
        "SFUMATO_JOB_ATTEMPT": "1",
        "SFUMATO_JOB_TOKEN": token,
    }
    argv = [sys.executable, str(Path(__file__).resolve()), "--reporting-child", str(out), "--steps", str(steps)]
    subprocess.run(argv, env=env, cwd=REPO, check=True, timeout=1800, stdout=subprocess.DEVNULL)
    result = json.loads(out.read_text())
    stored = points_stored(bench, job_id)
    pairs = [on / off - 1 for on, off in zip(result["on"], result["off"], strict=True)]
    overhead = statistics.median(pairs) * 100
    low, high = bootstrap_median_interval(pairs)
    on_steps = len(result["on"]) * BLOCK_STEPS
    calls, thread = result["calls_cpu"] / on_steps, result["thread_cpu"] / on_steps
    # All of the thread's CPU (it also ships during the off blocks) against the reporting steps' time.
    share = (result["calls_cpu"] + result["thread_cpu"]) / (sum(result["on"]) * BLOCK_STEPS) * 100
    on_ms, off_ms = statistics.median(result["on"]) * 1000, statistics.median(result["off"]) * 1000
    note = (
        f"{len(pairs)} pairs of {BLOCK_STEPS}-step blocks, on and off in random order within each pair; the "
        f"figure is the median of the pairs' on/off step-time ratios, 95% interval {low * 100:+.2f}% to "
        f"{high * 100:+.2f}% (bootstrap; the noise floor); median step {off_ms:.1f} ms off, {on_ms:.1f} ms on; "
        f"'-' when the interval holds 0.5 (below the noise: see the CPU figure); {stored:,} points stored"
    )
    verdict = True if high * 100 <= 0.5 else False if low * 100 > 0.5 else None
    bench.add(Figure("reporting", "step time, reporting on vs off", overhead, "%", "≤ 0.5", verdict, pairs, note))
    note = (
        f"the reporter's calls on the training thread {calls * 1e6:.0f} µs and its background thread "
        f"{thread * 1e6:.0f} µs of CPU a reporting step (thread CPU clocks, after {WARMUP_STEPS} warm-up steps; "
        "all of the thread's time counted against the reporting steps), over their time; the server's own work "
        "on the reports is not in it"
    )
    bench.add(Figure("reporting", "reporter CPU / step time", share, "%", "≤ 0.5", share <= 0.5, [], note))


def points_stored(bench: Bench, job_id: int) -> int:
    """The job's metric points, counted through the API (whatever the storage)."""
    with bench.client() as http:
        keys = http.get(f"/api/v1/jobs/{job_id}/metrics/keys").json()["keys"]
        params = {"keys": ",".join(keys), "max_points": 100_000}
        series = http.get(f"/api/v1/jobs/{job_id}/metrics", params=params).json()["series"] if keys else []
    return sum(value is not None for s in series for value in s["values"])


def bootstrap_median_interval(values: list[float], rounds: int = 2000) -> tuple[float, float]:
    """95% bootstrap interval of the median of `values`."""
    rng = random.Random(2)
    medians = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(rounds))
    return medians[int(rounds * 0.025)], medians[int(rounds * 0.975) - 1]


def reporting_child(out: Path, steps: int) -> None:
    """Train the tiny model in pairs of blocks of steps, the reporter's calls on in one block of each pair and off
    in the other (the order drawn at random, so nothing periodic in the training lines up with them), a sample
    on every 10th reporting step. Writes each block's mean step time, and the reporter's CPU time."""
    import threading

    import torch

    from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
    from trainer.job import TrainingJob
    from trainer.layout import step_batch
    from trainer.models.builtin_tiny import ensure_builtin_tiny
    from trainer.reporting.reporter import Reporter
    from trainer.run import load_spec, step_metrics, to_png

    home = Path(os.environ["SFUMATO_HOME"])
    cached = ensure_builtin_tiny(Path.home() / ".cache" / "sfumato" / "builtin-tiny-sd3")
    (home / cached.name).symlink_to(cached, target_is_directory=True)
    spec_path = home / "reporting-spec.json"
    spec_path.write_text(json.dumps(SPEC))
    spec = load_spec(spec_path)
    layout = EXECUTOR_CLASSES[spec.executor.name].layout
    job = TrainingJob.build(spec, layout)
    executor = make_executor(spec.executor, job)
    pool = job.prompts
    output_dir = home / "reporting-run"
    output_dir.mkdir(exist_ok=True)
    reporter = Reporter.from_environment(output_dir)
    (thread,) = (t for t in threading.enumerate() if t.name.startswith("sfumato-reporter"))
    thread_clock = time.pthread_getcpuclockid(thread.ident)  # type: ignore[arg-type]
    png = to_png(torch.rand(3, 64, 64))
    extra = [f"executor/metric_{i:02d}" for i in range(KEYS)]
    algo = spec.algorithm
    coin = random.Random(0)
    pairs = max(1, steps // (2 * BLOCK_STEPS))
    plan = [True] * WARMUP_STEPS
    for _ in range(pairs):
        first = coin.random() < 0.5
        plan += [first] * BLOCK_STEPS + [not first] * BLOCK_STEPS
    blocks: dict[bool, list[float]] = {True: [], False: []}
    block: list[float] = []
    calls_cpu = 0.0
    thread_cpu = 0.0
    reported = 0
    for step, reporting in enumerate(plan, start=1):
        if step == WARMUP_STEPS + 1:
            calls_cpu, thread_cpu = 0.0, time.clock_gettime(thread_clock)
        started = time.perf_counter()
        batch = step_batch(pool, step, 0, algo.prompts_per_step, algo.group_size, 0, 1, layout)
        result = executor.train_step(batch)
        metrics = step_metrics(result, job, job.dist, time.perf_counter() - started)
        for key in extra[: max(0, KEYS - len(metrics))]:
            metrics[key] = float(step)
        if reporting:
            called = time.thread_time()
            reporter.metrics(step, metrics)
            reporter.progress(step, len(plan), metrics["reward/mean"], metrics["throughput/samples_per_s"])
            reporter.print(f"step {step}/{len(plan)} reward {metrics['reward/mean']:.4f}")
            reported += 1
            if reported % 10 == 1:
                reporter.sample(step, "eval", "a red apple", 0, 0.5, png)
            calls_cpu += time.thread_time() - called
        if step > WARMUP_STEPS:
            block.append(time.perf_counter() - started)
            if len(block) == BLOCK_STEPS:
                blocks[reporting].append(statistics.mean(block))
                block = []
    thread_cpu = time.clock_gettime(thread_clock) - thread_cpu
    reporter.close()
    result = {"on": blocks[True], "off": blocks[False], "calls_cpu": calls_cpu, "thread_cpu": thread_cpu}
    out.write_text(json.dumps(result))


# --- 5. API under load ----------------------------------------------------------------------------


def server_pids(bench: Bench) -> list[int]:
    """The server's supervisor and its worker processes (uvicorn --workers), from /proc."""
    root = bench.procs["server"].pid
    children = [int(p) for p in Path(f"/proc/{root}/task/{root}/children").read_text().split()]
    return [root, *children]


def server_processes(bench: Bench) -> int:
    """Processes serving requests: uvicorn's workers (not multiprocessing's resource tracker), or the server
    process itself when it runs alone."""
    workers = [p for p in server_pids(bench)[1:] if b"spawn_main" in Path(f"/proc/{p}/cmdline").read_bytes()]
    return len(workers) or 1


class HttpPool:
    """Keep-alive HTTP/1.1 connections over raw asyncio streams: a request costs the generator tens of
    microseconds (httpx costs about a millisecond, which on 2 shared cores would be taken from the server)."""

    def __init__(self, url: str, limit: int) -> None:
        parsed = httpx.URL(url)
        self.host, self.port = parsed.host, parsed.port or 80
        self.idle: list[tuple[asyncio.StreamReader, asyncio.StreamWriter]] = []
        self.limit = limit
        self.opened = 0  # connections opened in all

    def request(self, path: str, headers: dict[str, str]) -> bytes:
        lines = [f"GET {path} HTTP/1.1", f"Host: {self.host}:{self.port}", *(f"{k}: {v}" for k, v in headers.items())]
        return ("\r\n".join(lines) + "\r\n\r\n").encode()

    async def get(self, raw: bytes) -> int:
        """Send a prepared request; its status once the whole body has arrived. A kept-alive connection the
        server closed while it was idle (its keep-alive timeout) fails before any answer: the GET goes again on
        a new connection, as HTTP clients retry idempotent requests."""
        if self.idle:
            connection = self.idle.pop()
            try:
                return await self._exchange(connection, raw)
            except asyncio.IncompleteReadError as exc:
                if exc.partial:
                    raise
            except ConnectionError:
                pass
        self.opened += 1
        return await self._exchange(await asyncio.open_connection(self.host, self.port), raw)

    async def _exchange(self, connection: tuple[asyncio.StreamReader, asyncio.StreamWriter], raw: bytes) -> int:
        reader, writer = connection
        try:
            writer.write(raw)
            head = await reader.readuntil(b"\r\n\r\n")
            status = int(head[9:12])
            fields = dict(line.split(b":", 1) for line in head.lower().split(b"\r\n")[1:] if b":" in line)
            if b"content-length" in fields:
                await reader.readexactly(int(fields[b"content-length"]))
            else:  # chunked
                while size := int((await reader.readuntil(b"\r\n")).strip(), 16):
                    await reader.readexactly(size + 2)
                await reader.readuntil(b"\r\n")
        except BaseException:
            writer.close()
            raise
        if fields.get(b"connection", b"").strip() == b"close" or len(self.idle) >= self.limit:
            writer.close()
        else:
            self.idle.append(connection)
        return status

    def close(self) -> None:
        for _, writer in self.idle:
            writer.close()
        self.idle.clear()


def session_cookie(url: str, token: str) -> str:
    """Log in to the pages once (as a browser does) and return the session cookie."""
    with httpx.Client(base_url=url, timeout=30) as http:
        page = http.get("/login")
        csrf = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
        assert csrf, "no CSRF token on the login page"
        login = http.post("/login", data={"token": token, "csrf_token": csrf.group(1)})
        assert login.status_code in (200, 303), login.status_code
        return str(http.cookies["sfumato_session"])


async def open_loop(url: str, requests: list[tuple[str, bytes]], rate: float, seconds: float) -> dict[str, Any]:
    """Requests at fixed start times (rate per second, taking the prepared requests in turn); latency from the
    scheduled start to the last byte of the body. A request not answered within 10 s counts as an error (a
    100 ms target has failed long before), and so does one due while MAX_IN_FLIGHT are still open: the
    generator stays bounded when the server falls behind. Its own CPU time is measured too."""
    latencies: dict[str, list[float]] = {name: [] for name, _ in requests}
    errors: list[str] = []
    pool = HttpPool(url, MAX_IN_FLIGHT)
    in_flight = 0

    async def one(name: str, raw: bytes, at: float) -> None:
        nonlocal in_flight
        in_flight += 1
        try:
            status = await asyncio.wait_for(pool.get(raw), timeout=10)
            if status != 200:
                errors.append(f"{name}: {status}")
        except (TimeoutError, OSError, asyncio.IncompleteReadError, ValueError) as exc:
            errors.append(f"{name}: {type(exc).__name__}")
        finally:
            in_flight -= 1
        latencies[name].append((time.perf_counter() - at) * 1000)

    count = int(rate * seconds)
    tasks = []
    cpu = time.process_time()
    start = time.perf_counter() + 0.1
    for i in range(count):
        name, raw = requests[i % len(requests)]
        at = start + i / rate
        await asyncio.sleep(max(0.0, at - time.perf_counter()))  # always yields, so answers are read
        if in_flight >= MAX_IN_FLIGHT:
            errors.append(f"{name}: not sent, {MAX_IN_FLIGHT} requests still open")
            continue
        tasks.append(asyncio.create_task(one(name, raw, at)))
    await asyncio.gather(*tasks)
    elapsed = time.perf_counter() - start
    pool.close()
    return {
        "latencies": latencies,
        "errors": errors,
        "lateness": max(0.0, elapsed - seconds),
        "generator_cpu": (time.process_time() - cpu) / elapsed,
        "connections": pool.opened,
    }


def load_page_job(bench: Bench) -> int:
    """A finished job with 50 keys x 1,000 steps of metrics and some log lines, for the job page when the reads
    section's big job is not there (ingested through the API, as a trainer would)."""
    job_id, token = running_job(bench, "load-page")
    keys = key_names(KEYS)
    rng = random.Random(job_id)
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    with httpx.Client(base_url=bench.url, headers=headers, timeout=60) as http:
        for batch in range(10):
            body = batch_body(1, batch * BATCH_STEPS, keys, rng)
            http.post(f"/api/v1/ingest/{job_id}/metrics", content=body).raise_for_status()
    finish_jobs(bench, [job_id])
    return job_id


def bench_load(bench: Bench, job_id: int, rate: float, seconds: float) -> None:
    job_id = job_id or load_page_job(bench)
    print(f"5. API under load ({rate:g} requests/s for {seconds:g} s, job page of job {job_id}; load {load_average()})")
    pool = HttpPool(bench.url, 1)
    api = pool.request("/api/v1/jobs", {"Authorization": f"Bearer {bench.token}"})
    page = pool.request(f"/jobs/{job_id}", {"Cookie": f"sfumato_session={session_cookie(bench.url, bench.token)}"})
    requests = [("/api/v1/jobs", api), (f"/jobs/{job_id}", page)]
    asyncio.run(open_loop(bench.url, requests, 20, 2.0))  # warm-up: connections, plans, every server process
    costs = {
        name: cpu_per_request(bench, [(name, raw)], CALIBRATION_RATE, CALIBRATION_SECONDS)[0] for name, raw in requests
    }
    busy, result = cpu_per_request(bench, requests, rate, seconds)
    every = [t for values in result["latencies"].values() for t in values]
    errors = result["errors"]
    parts = ", ".join(
        f"{p} p50 {statistics.median(v):.0f} / p99 {percentile(v, 99):.0f} ms" for p, v in result["latencies"].items()
    )
    alone = ", ".join(f"{name} {cost * 1000:.1f} ms" for name, cost in costs.items())
    needed = rate * statistics.mean(costs.values())
    note = (
        f"{len(every):,} requests, {len(errors)} errors ({parts}); open loop over raw asyncio keep-alive "
        f"connections ({result['connections']} opened), latency from each request's scheduled start; server "
        f"({server_processes(bench)} processes) + PostgreSQL CPU a request, each alone at {CALIBRATION_RATE:g}/s: "
        f"{alone}, so {rate:g}/s of the two needs {needed:.1f} of the {os.cpu_count()} cores; under the load "
        f"{busy * 1000:.1f} ms an answered request; the generator {result['generator_cpu'] * 100:.0f}% of one core"
    )
    p99 = percentile(every, 99)
    bench.add(Figure("load", "jobs list + job page: p99", p99, "ms", "≤ 100", p99 <= 100 and not errors, [], note))
    kinds = "; ".join(f"{count} x {kind}" for kind, count in Counter(errors).most_common(5))
    bench.add(Figure("load", "errors", float(len(errors)), "", "0", not errors, [], kinds))
    if p99 > 100 or errors:
        bench_capacity(bench, requests, rate)


def bench_capacity(bench: Bench, requests: list[tuple[str, bytes]], missed: float) -> None:
    """When the target rate is missed: the highest of a few lower rates this machine serves within the target
    (p99 ≤ 100 ms, no error), each for CAPACITY_SECONDS, highest first."""
    tried = []
    for fraction in CAPACITY_FRACTIONS:
        rate = missed * fraction
        result = asyncio.run(open_loop(bench.url, requests, rate, CAPACITY_SECONDS))
        p99 = percentile([t for values in result["latencies"].values() for t in values], 99)
        tried.append(f"{rate:g}/s: p99 {p99:,.0f} ms, {len(result['errors'])} errors")
        if p99 <= 100 and not result["errors"]:
            break
    else:
        rate = 0.0
    note = f"the same requests for {CAPACITY_SECONDS:g} s at each rate, highest first: " + "; ".join(tried)
    bench.add(Figure("load", "highest rate served within p99 ≤ 100 ms", rate, "requests/s", "-", None, [], note))


def cpu_per_request(
    bench: Bench, requests: list[tuple[str, bytes]], rate: float, seconds: float
) -> tuple[float, dict[str, Any]]:
    """An open-loop run, and the server's and PostgreSQL's CPU seconds per answered request during it."""
    before = platform_cpu(bench)
    result = asyncio.run(open_loop(bench.url, requests, rate, seconds))
    sent = sum(len(values) for values in result["latencies"].values())
    answered = sent - sum(not e.endswith("still open") for e in result["errors"])
    return cpu_since(bench, before) / max(1, answered), result


# --- report -------------------------------------------------------------------------------------------


def write_report(bench: Bench, args: argparse.Namespace, loads: list[str]) -> str:
    when = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# make bench-platform",
        "",
        f"Real server (`python -m sfumato.cli server`, uvicorn) on PostgreSQL with Redis, {os.uname().nodename}, "
        f"{os.cpu_count()} CPUs, {when}. Load average (1/5/15 min) at each section's start: "
        + "; ".join(loads)
        + ". Each figure is the median of the runs listed in platform.json.",
        "",
        "| Section | Figure | Measured | Target | Verdict | Notes |",
        "|---|---|---:|---:|---|---|",
    ]
    for f in bench.figures:
        verdict = {True: "meets", False: "MISSES", None: "-"}[f.meets]
        value = f"{f.value:,.2f}" if f.unit in ("x", "%") else f"{f.value:,.0f}"
        lines.append(f"| {f.section} | {f.name} | {value} {f.unit} | {f.target} | {verdict} | {f.note} |")
    markdown = "\n".join(lines) + "\n"
    results = args.results
    results.mkdir(parents=True, exist_ok=True)
    (results / "platform.md").write_text(markdown)
    payload = {
        "when": when,
        "cpus": os.cpu_count(),
        "load_average": loads,
        "args": vars(args),
        "figures": [f.__dict__ for f in bench.figures],
    }
    (results / "platform.json").write_text(json.dumps(payload, indent=1, default=str))
    return markdown


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sections", default="ingest,reads,dispatch,reporting,load")
    parser.add_argument("--runs", type=int, default=5, help="runs per figure")
    parser.add_argument("--ingest-seconds", type=float, default=6.0)
    parser.add_argument("--long-steps", type=int, default=LONG_STEPS)
    parser.add_argument("--big-steps", type=int, default=BIG_STEPS)
    parser.add_argument("--compare-steps", type=int, default=COMPARE_STEPS)
    parser.add_argument("--dispatch-runs", type=int, default=12)
    parser.add_argument(
        "--steps", type=int, default=800, help="measured tiny-model steps of the reporting run (100 on/off pairs)"
    )
    parser.add_argument("--rate", type=float, default=200.0)
    parser.add_argument("--load-seconds", type=float, default=60.0)
    parser.add_argument("--results", type=Path, default=RESULTS, help="folder of platform.md and platform.json")
    parser.add_argument("--reporting-child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.reporting_child:
        reporting_child(args.reporting_child, args.steps)
        return
    sections = set(args.sections.split(","))
    server_url = os.environ.get("SFUMATO_BENCH_POSTGRES_URL", DEFAULT_POSTGRES)
    redis_url = os.environ.get("SFUMATO_BENCH_REDIS_URL", DEFAULT_REDIS)
    loads = [f"start {load_average()}"]
    home = Path(tempfile.mkdtemp(prefix="sfumato-bench-"))
    with scratch_postgres_database(server_url, "sfumato_bench") as database_url:
        upgrade(database_url)
        token = "sfu_" + secrets.token_urlsafe(24)
        engine = make_engine(database_url)
        with Session(engine) as session:
            ensure_admin(session, Settings(home=home, database_url=database_url, admin_token=token))
        port = free_port()
        env = {
            **os.environ,
            "SFUMATO_HOME": str(home),
            "SFUMATO_DATABASE_URL": database_url,
            "SFUMATO_BROKER_URL": redis_url,
            "SFUMATO_PUBLIC_URL": f"http://127.0.0.1:{port}",
            "SFUMATO_ADMIN_TOKEN": token,
            "SFUMATO_SECRET_KEY": secrets.token_hex(32),
            "SFUMATO_WORKER_HOSTNAME": f"bench-{uuid.uuid4().hex[:8]}",
            "SFUMATO_WORKER_CPU_SLOTS": "2",
            "SFUMATO_CANCEL_GRACE_SECONDS": "2",
            "SFUMATO_WORKER_METRICS_PORT": "0",
        }
        bench = Bench(f"http://127.0.0.1:{port}", token, database_url, engine, home, env)
        try:
            bench.start("server", [sys.executable, "-m", "sfumato.cli", "server", "--port", str(port)])
            wait_http(f"{bench.url}/api/v1/health")
            finish_jobs(bench, [submit(bench, f"history-{i}") for i in range(100)])  # a realistic jobs list
            big = 0
            if "ingest" in sections:
                loads.append(f"ingestion {load_average()}")
                bench_ingestion(bench, [1, 4, 16], args.runs, args.ingest_seconds)
            if "reads" in sections:
                loads.append(f"reads {load_average()}")
                big = bench_reads(bench, args.runs, args.long_steps, args.big_steps, args.compare_steps)
            if "dispatch" in sections:
                loads.append(f"dispatch {load_average()}")
                bench_dispatch(bench, args.dispatch_runs)
            if "reporting" in sections:
                loads.append(f"reporting {load_average()}")
                bench_reporting(bench, args.steps)
            if "load" in sections:
                loads.append(f"load {load_average()}")
                bench_load(bench, big, args.rate, args.load_seconds)
            loads.append(f"end {load_average()}")
        finally:
            bench.stop()
            engine.dispose()
            shutil.rmtree(home, ignore_errors=True)
    print()
    print(write_report(bench, args, loads))


if __name__ == "__main__":
    main()
