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
import json
import os
import secrets
import shutil
import sys
import tempfile
import uuid
from datetime import UTC, datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from platform_sections.dispatch import bench_dispatch
from platform_sections.harness import (
    BIG_STEPS,
    COMPARE_STEPS,
    DEFAULT_POSTGRES,
    DEFAULT_REDIS,
    LONG_STEPS,
    RESULTS,
    Bench,
    finish_jobs,
    free_port,
    load_average,
    submit,
    wait_http,
)
from platform_sections.ingestion import bench_ingestion
from platform_sections.load import bench_load
from platform_sections.reads import bench_reads
from platform_sections.reporting import bench_reporting, reporting_child
from sqlalchemy.orm import Session

from server.config import Settings
from server.db import make_engine, scratch_postgres_database
from server.migrate import upgrade
from server.services.auth import ensure_admin


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
