"""Section 1: trainers posting metric batches over HTTP, first sends and idempotent re-sends."""

from __future__ import annotations

import asyncio
import math
import os
import random
import statistics
import time
from typing import Any

import httpx
import orjson

from platform_sections.harness import (
    BATCH_STEPS,
    KEYS,
    RESEND_EVERY,
    Bench,
    Figure,
    cpu_since,
    finish_jobs,
    key_names,
    load_average,
    platform_cpu,
    running_job,
)


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


async def _ingest_round(
    url: str, jobs: list[tuple[int, str]], seconds: float, next_step: dict[int, int]
) -> list[dict[str, Any]]:
    results = await asyncio.gather(
        *(trainer_client(url, job_id, token, seconds, next_step[job_id]) for job_id, token in jobs)
    )
    for (job_id, _), result in zip(jobs, results, strict=True):
        next_step[job_id] = result["next_step"]
    return list(results)
