"""The bench's platform: the processes it started, the figures it measured, and what every section does
with them (submit a job, a running job with its token, CPU used by the server and the database)."""

from __future__ import annotations

import json
import math
import os
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
from sqlalchemy import text
from sqlalchemy.engine import Engine
from sqlalchemy.orm import Session

from server.models import Job, JobStatus
from server.services.tokens import JOB_TOKEN_PREFIX, hash_token, new_token
from sfumato.cli.process_groups import start_process, stop_processes

REPO = Path(__file__).resolve().parents[2]

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
        self.procs[name] = start_process(argv, self.env, self.home / f"{name}.log", REPO)

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
        job.status, job.attempt, job.token_hash = JobStatus.RUNNING, 1, hash_token(raw)
        session.commit()
    return job_id, raw


def finish_jobs(bench: Bench, job_ids: list[int]) -> None:
    with Session(bench.engine) as session:
        for job_id in job_ids:
            job = session.get_one(Job, job_id)
            job.status, job.token_hash, job.attempt = JobStatus.SUCCEEDED, None, max(job.attempt, 1)
        session.commit()


def key_names(count: int) -> list[str]:
    fixed = ["reward/mean", "reward/std", "loss", "kl", "clip_frac", "grad_norm", "time/step", "memory/peak_bytes"]
    return (fixed + [f"executor/metric_{i:02d}" for i in range(count)])[:count]


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


def server_pids(bench: Bench) -> list[int]:
    """The server's supervisor and its worker processes (uvicorn --workers), from /proc."""
    root = bench.procs["server"].pid
    children = [int(p) for p in Path(f"/proc/{root}/task/{root}/children").read_text().split()]
    return [root, *children]


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    rank = max(0, min(len(ordered) - 1, math.ceil(q / 100 * len(ordered)) - 1))
    return ordered[rank]
