"""Section 5: the API and the job page under an open-loop load."""

from __future__ import annotations

import asyncio
import os
import random
import re
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Any

import httpx

from platform_sections.harness import (
    BATCH_STEPS,
    CALIBRATION_RATE,
    CALIBRATION_SECONDS,
    CAPACITY_FRACTIONS,
    CAPACITY_SECONDS,
    KEYS,
    MAX_IN_FLIGHT,
    Bench,
    Figure,
    cpu_since,
    finish_jobs,
    key_names,
    load_average,
    percentile,
    platform_cpu,
    running_job,
    server_pids,
)
from platform_sections.ingestion import batch_body


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
