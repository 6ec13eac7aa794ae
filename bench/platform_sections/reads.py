"""Section 2: chart reads of a 10,000,000-point job, at a chart's width and downsampled, and the compare figure."""

from __future__ import annotations

import asyncio
import statistics
import time

import httpx
import numpy as np
from sqlalchemy import text
from sqlalchemy.orm import Session

from platform_sections.harness import (
    BUCKETS,
    COMPARE_KEYS,
    KEYS,
    LONG_KEYS,
    Bench,
    Figure,
    finish_jobs,
    key_names,
    load_average,
    submit,
)
from server.services import metric_blocks
from server.services.current_points import record_first_step


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
