"""``make bench-web``: server time of the dashboard's pages on PostgreSQL with a big job.

Creates a fresh PostgreSQL database (dropped at the end), migrates it, and loads 100 jobs: one
holding 1,000,000 metric points (20 keys x 50,000 steps, bulk-loaded with COPY) and 2,000 eval
samples; the others a few thousand points each. Then it times, in process, the requests the
pages make: the app runs under httpx's ASGI transport, and a request's server time is the wall
time from handing the request to the app until its whole body came back (routing, session cookie,
SQL, rendering; no network, no browser). Each figure is the median of several runs after one
warm-up. Prints a table, writes bench/results/web.md and web.json. Asserts nothing.

    SFUMATO_BENCH_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:5432/postgres .venv/bin/python bench/web.py
"""

# ruff: noqa: E402  (project imports follow the sys.path line)
from __future__ import annotations

import argparse
import asyncio
import io
import json
import math
import os
import platform
import re
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import httpx
from argon2 import PasswordHasher
from sqlalchemy import text
from sqlalchemy.engine import make_url
from web_experiments import create_ms, experiment_of_big_jobs

from server.config import Settings
from server.db import scratch_postgres_database
from server.migrate import upgrade
from server.models import Job, JobEvent, JobStatus, LogLine, Membership, Team, User
from server.services import metric_blocks
from server.services.current_points import record_first_step
from sfumato.app import create_app
from trainer.spec import EXECUTORS as SPEC_EXECUTORS
from trainer.spec.ingest import MetricStep
from web.pages.job_detail import CHARTS

DEFAULT_URL = "postgresql+psycopg://postgres@127.0.0.1:5432/postgres"
RESULTS = REPO / "bench" / "results"
PASSWORD = "bench-password"
BIG_STEPS = 50_000
COMPARED_BIG_JOBS = 8  # the compare API's target: 8 jobs of 1,000,000 points each
# The keys a trainer reports every step (20): 20 x 50,000 = 1,000,000 points.
BIG_KEYS = [
    "reward/mean",
    "reward/std",
    "reward/brightness",
    "reward/colorfulness",
    "loss",
    "kl",
    "clip_frac",
    "approx_kl",
    "throughput/samples_per_s",
    "throughput/steps_per_s",
    "time/rollout",
    "time/reward",
    "time/train",
    "time/sync",
    "time/step",
    "memory/peak_bytes",
    "memory/reserved_bytes",
    "executor/retained_graphs",
    "executor/overlap",
    "lr",
]
SMALL_STEPS = 300
GALLERY_STEPS, GALLERY_PROMPTS, GALLERY_SEEDS = 100, 10, 2  # 2,000 images
EXECUTORS = [name for name in SPEC_EXECUTORS if name != "digenrl"]  # digenrl needs two devices
MAX_POINTS = 1000  # about a chart's pixel width; what charts.js asks for


# ---- database --------------------------------------------------------------------------------------------


def spec_for(name: str, executor: str) -> dict[str, Any]:
    return {
        "name": name,
        "model": {"family": "sd3", "path": "builtin:tiny", "finetune": "full", "gradient_checkpointing": False},
        "algorithm": {"name": "dance_grpo", "sampling_steps": 16, "train_timesteps": 8, "group_size": 8},
        "executor": {"name": executor},
        "reward": [{"name": "brightness", "weight": 1.0, "path": None}],
    }


def store_metrics(session: Any, job_id: int, keys: list[str], steps: int, speed: float) -> None:
    """The job's points through the ingestion service's block writer, 1,000 steps per batch."""
    start = 1_732_870_000.0
    for first in range(0, steps, 1000):
        reported = []
        for step in range(first, min(first + 1000, steps)):
            base = 0.3 + 0.4 * (1 - math.exp(-step / (steps / 5))) + 0.02 * math.sin(step * 0.37)
            values = {key: base * (1 + 0.1 * i) + 0.01 * math.sin(step * (i + 1) * 0.013) for i, key in enumerate(keys)}
            reported.append(MetricStep(step=step, wall_time=start + step * 6.0 / speed, values=values))
        record_first_step(session, job_id, 1, first)
        metric_blocks.store(session, job_id, 1, metric_blocks.BatchPoints.of_steps(reported)[0])
        session.commit()


def copy_rows(raw: Any, statement: str, rows: Iterator[str]) -> None:
    """COPY in chunks of ~8 MB of text."""
    with raw.cursor() as cur, cur.copy(statement) as copy:
        buf = io.StringIO()
        for row in rows:
            buf.write(row)
            if buf.tell() > 8_000_000:
                copy.write(buf.getvalue())
                buf = io.StringIO()
        copy.write(buf.getvalue())


def seed(app: Any, jobs: int) -> dict[str, Any]:
    """Users and team, `jobs` jobs, the big job's 1M points and 2,000 samples; returns ids for the runs."""
    now = datetime.now(UTC).replace(tzinfo=None)
    with app.state.sessionmaker() as session:
        team = Team(name="vision")
        user = User(username="bench", password_hash=PasswordHasher(time_cost=1, memory_cost=1024).hash(PASSWORD))
        user.is_admin = True
        session.add_all([team, user])
        session.flush()
        session.add(Membership(user_id=user.id, team_id=team.id, role="admin"))
        made = []
        for n in range(jobs):
            executor = EXECUTORS[n % len(EXECUTORS)]
            status = JobStatus.RUNNING if n == 0 else (JobStatus.SUCCEEDED if n % 5 else JobStatus.FAILED)
            job = Job(
                name=f"sd3-dance-{executor}-{n:03d}",
                spec=spec_for(f"sd3-dance-{executor}-{n:03d}", executor),
                status=status,
                algorithm="dance_grpo",
                executor=executor,
                model_family="sd3",
                device_type="cuda",
                devices=2,
                attempt=1,
                step=BIG_STEPS if n == 0 else SMALL_STEPS,
                total_steps=BIG_STEPS * 2 if n == 0 else SMALL_STEPS,
                last_reward=0.7,
                owner_id=user.id,
                team_id=team.id,
                created_at=now - timedelta(hours=jobs - n),
                started_at=now - timedelta(hours=jobs - n),
                finished_at=None if status == JobStatus.RUNNING else now - timedelta(hours=jobs - n - 1),
            )
            session.add(job)
            made.append(job)
        session.flush()
        for job in made:
            history = (JobStatus.QUEUED, JobStatus.RUNNING, job.status)
            session.add_all(JobEvent(job_id=job.id, attempt=1, status=s) for s in history)
        big = made[0]
        session.add_all(
            LogLine(job_id=big.id, attempt=1, text=f"step {i}: reward 0.{i % 97:02d} loss 0.0{i % 89:02d}")
            for i in range(3000)
        )
        session.commit()
        ids = [job.id for job in made]

    with app.state.sessionmaker() as session:
        store_metrics(session, ids[0], BIG_KEYS, BIG_STEPS, 1.0)
        for n, job_id in enumerate(ids[1:], start=1):
            store_metrics(session, job_id, BIG_KEYS[:15], SMALL_STEPS, 1 + (n % 4) * 0.2)
    raw = app.state.engine.raw_connection()
    try:
        folder = f"jobs/{ids[0]}/samples"
        sample_rows = (
            f"{ids[0]}\t1\t{step * 500}\teval\ta prompt about {p} colours\t{seed}\t{0.3 + step / 1000!r}\t"
            f"{folder}/s{step}-p{p}-{seed}.png\t512\t512\t{now.isoformat()}\n"
            for step in range(GALLERY_STEPS)
            for p in range(GALLERY_PROMPTS)
            for seed in range(GALLERY_SEEDS)
        )
        sample_columns = (
            "samples (job_id, attempt, step, kind, prompt, seed, reward, image_path, width, height, created_at)"
        )
        copy_rows(raw, f"COPY {sample_columns} FROM STDIN", sample_rows)
        raw.commit()
    finally:
        raw.close()
    big_twins = twin_big_job(app, ids[0], 8)  # 8 jobs of 1M points to compare, 9 for the 3 x 3 experiment
    with app.state.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
        conn.execute(text("VACUUM ANALYZE"))  # what autovacuum does soon after a bulk load
        points = conn.scalar(text("SELECT sum(n) FROM metric_blocks"))
        big_points = conn.scalar(text("SELECT sum(n) FROM metric_blocks WHERE job_id = :j"), {"j": ids[0]})
        samples = conn.scalar(text("SELECT count(*) FROM samples WHERE job_id = :j"), {"j": ids[0]})
    return {
        "ids": ids,
        "big": ids[0],
        "big_twins": big_twins[: COMPARED_BIG_JOBS - 1],
        "experiment": experiment_of_big_jobs(app, [ids[0], *big_twins]),
        "points": points,
        "big_points": big_points,
        "samples": samples,
    }


def twin_big_job(app: Any, big: int, count: int) -> list[int]:
    """`count` more jobs with the big job's 1,000,000 points (its blocks copied inside PostgreSQL), each under
    another executor: what the compare API reads for 8 big jobs."""
    columns = "key, attempt, block, n, total, first_step, first_wall, last_step, last_value, last_wall, "
    columns += "min_value, max_value, points, tiles"
    twins = []
    with app.state.engine.begin() as conn:
        for n in range(count):
            executor = EXECUTORS[(n + 1) % len(EXECUTORS)]
            twin = conn.scalar(
                text(
                    "INSERT INTO jobs (name, spec, status, priority, algorithm, executor, model_family, device_type, "
                    "devices, nodes, attempt, max_attempts, owner_id, team_id, cancel_requested, step, total_steps, "
                    "last_reward, created_at, started_at, finished_at) "
                    "SELECT name || '-twin-' || :n, spec, status, priority, algorithm, :executor, model_family, "
                    "device_type, devices, nodes, attempt, max_attempts, owner_id, team_id, cancel_requested, step, "
                    "total_steps, last_reward, created_at, started_at, finished_at FROM jobs WHERE id = :big "
                    "RETURNING id"
                ),
                {"n": n, "executor": executor, "big": big},
            )
            conn.execute(
                text(
                    f"INSERT INTO metric_blocks (job_id, {columns}) SELECT :twin, {columns} FROM metric_blocks "
                    "WHERE job_id = :big"
                ),
                {"twin": twin, "big": big},
            )
            conn.execute(
                text(
                    "INSERT INTO metric_attempts (job_id, attempt, first_step) SELECT :twin, attempt, first_step "
                    "FROM metric_attempts WHERE job_id = :big"
                ),
                {"twin": twin, "big": big},
            )
            twins.append(twin)
    return twins


# ---- timing ----------------------------------------------------------------------------------------------


async def login(client: httpx.AsyncClient) -> None:
    page = await client.get("/login")
    token = re.search(r'name="csrf-token" content="([^"]+)"', page.text)
    assert token, "no CSRF token on the login page"
    response = await client.post(
        "/login", data={"username": "bench", "password": PASSWORD, "csrf_token": token.group(1)}
    )
    assert response.status_code == 303, response.text


async def server_ms(client: httpx.AsyncClient, url: str, runs: int) -> tuple[float, list[float], int]:
    """Median milliseconds over `runs` after one warm-up, the samples, and the body size."""
    first = await client.get(url)
    if first.status_code != 200:
        raise RuntimeError(f"{url} answered {first.status_code}: {first.text[:300]}")
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        response = await client.get(url)
        await response.aread()
        samples.append((time.perf_counter() - start) * 1000)
        assert response.status_code == 200, url
    return statistics.median(samples), samples, len(first.content)


def chart_keys(chart: dict[str, Any]) -> list[str]:
    """The keys the job page's chart asks the API for (web/static/charts.js chartKeys): its own, every
    reported key under one of its prefixes, and its band's half-width."""
    band = chart["band"][1] if chart.get("band") else None
    keys = [k for k in chart["keys"] if k in BIG_KEYS]
    keys += [k for k in BIG_KEYS if k.startswith(tuple(chart.get("prefixes", []))) and k not in keys and k != band]
    return keys + ([band] if band in BIG_KEYS and chart["band"][0] in keys else [])


def cases(world: dict[str, Any]) -> list[tuple[str, str, float | None]]:
    """(what, URL, target ms); target None: measured for the record."""
    big = world["big"]
    compare = [big, *world["ids"][1:8]]
    api = f"/api/v1/jobs/{big}/metrics"
    out: list[tuple[str, str, float | None]] = [
        ("Job page HTML (1M-point job)", f"/jobs/{big}", 150),
        ("Chart keys (the charts' first read, and each poll)", f"{api}/keys", 100),
    ]
    for chart in CHARTS:
        if keys := chart_keys(chart):
            out.append((f"Chart data: {chart['title']}", f"{api}?keys={','.join(keys)}&max_points={MAX_POINTS}", 100))
    out += [("Compare page HTML (8 jobs)", "/compare?" + "&".join(f"job={i}" for i in compare), 300)]
    bigs = ",".join(str(i) for i in [big, *world["big_twins"]])
    out += [(f"Compare API ({COMPARED_BIG_JOBS} jobs of 1M points each)", f"/api/v1/compare?jobs={bigs}", 200)]
    out += [("Experiment API with summary (3 x 3 of 1M-point jobs)", f"/api/v1/experiments/{world['experiment']}", 300)]
    experiment = world["experiment"]
    out += [
        ("Experiment page HTML (3 x 3 of 1M-point jobs)", f"/experiments/{experiment}", 300),
        ("Experiment page summary poll", f"/experiments/{experiment}/live", None),
        ("Experiment curves, one chart (9 jobs of 1M points)",
         f"/api/v1/experiments/{experiment}/curves?key=reward/mean&max_points={MAX_POINTS}", None),
    ]  # fmt: skip
    compare_keys = "reward/mean,throughput/samples_per_s,memory/peak_bytes,time/step,loss,kl"
    out += [
        ("Compare chart data (1M-point job)", f"{api}?keys={compare_keys}&max_points={MAX_POINTS}", 100),
        ("Gallery HTML (2,000 images)", f"/jobs/{big}/gallery", 150),
        ("Gallery slider fragment", f"/jobs/{big}/gallery/grid?i=3", 150),
        ("Jobs list (100 jobs)", "/jobs", None),
        ("Job header poll", f"/jobs/{big}/header", None),
    ]
    return out


async def measure(app: Any, world: dict[str, Any], runs: int) -> list[dict[str, Any]]:
    transport = httpx.ASGITransport(app=app)
    results = []
    async with httpx.AsyncClient(transport=transport, base_url="http://bench", follow_redirects=False) as client:
        await login(client)
        for what, url, target in cases(world):
            median, samples, size = await server_ms(client, url, runs)
            ok = None if target is None else median <= target
            results.append(
                {
                    "what": what,
                    "url": url,
                    "median_ms": round(median, 1),
                    "target_ms": target,
                    "ok": ok,
                    "min_ms": round(min(samples), 1),
                    "max_ms": round(max(samples), 1),
                    "bytes": size,
                }
            )
            print(f"  {what:<44} {median:8.1f} ms", flush=True)
        results.append(await create_ms(app, client, runs))
    return results


# ---- report ----------------------------------------------------------------------------------------------


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| Request | Median (ms) | Min-max (ms) | Target (ms) | Verdict | Body |", "|---|---:|---:|---:|---|---:|"]
    for r in results:
        target = "—" if r["target_ms"] is None else f"≤ {r['target_ms']:.0f}"
        verdict = "—" if r["ok"] is None else ("meets" if r["ok"] else "MISSES")
        lines.append(
            f"| {r['what']} | {r['median_ms']:.1f} | {r['min_ms']:.0f}-{r['max_ms']:.0f} | {target} | {verdict} "
            f"| {r['bytes'] / 1024:.0f} KiB |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--postgres-url", default=os.environ.get("SFUMATO_BENCH_POSTGRES_URL") or DEFAULT_URL)
    parser.add_argument("--runs", type=int, default=9, help="timed runs per request (median reported)")
    parser.add_argument("--jobs", type=int, default=100)
    args = parser.parse_args()

    with scratch_postgres_database(args.postgres_url, "sfumato_bench") as url, tempfile.TemporaryDirectory() as home:
        print(f"database: fresh {make_url(url).database} on {make_url(url).host}; migrating and loading…", flush=True)
        upgrade(url)
        limits = {"max_queued_per_user": 10_000, "max_queued_per_team": 10_000}  # 64-cell experiments, again
        app = create_app(Settings(home=Path(home), database_url=url, secret_key=secrets.token_hex(32), **limits))
        started = time.perf_counter()
        world = seed(app, args.jobs)
        print(
            f"loaded {args.jobs} jobs, {world['points']:,} metric points ({world['big_points']:,} in job "
            f"#{world['big']}), {world['samples']:,} samples in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        try:
            results = asyncio.run(measure(app, world, args.runs))
        finally:
            app.state.engine.dispose()

    header = (
        f"Server time, in process (httpx ASGI transport: request in → full body out, no network), median of "
        f"{args.runs} runs after a warm-up, PostgreSQL, {args.jobs} jobs, {world['points']:,} metric points of "
        f"which {world['big_points']:,} in one job, {world['samples']:,} samples in its gallery. "
        f"{platform.node()}, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end, "
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC."
    )
    report = table(results)
    print()
    print(report)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "web.md").write_text(f"# make bench-web\n\n{header}\n\n{report}\n")
    payload = {"setup": header, "results": results}
    (RESULTS / "web.json").write_text(json.dumps(payload, indent=2) + "\n")
    print(f"\nwrote {RESULTS / 'web.md'} and {RESULTS / 'web.json'}")


if __name__ == "__main__":
    main()
