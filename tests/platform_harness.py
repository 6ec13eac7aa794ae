"""A whole platform in real processes: uvicorn with create_app, a `celery -A worker.celery_app worker`
on its own host queue, and the scheduler loop, all on one database and one broker.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session

from server.config import Settings
from server.db import make_engine
from server.migrate import upgrade
from server.services.auth import ensure_admin
from sfumato.cli.process_groups import start_process, stop_processes

REPO = Path(__file__).resolve().parents[1]
TINY_SPEC = REPO / "examples" / "tiny-native.json"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def live_processes(*markers: str) -> list[int]:
    """Process ids, zombies aside, whose command line mentions every marker (a job's run folder, a service's
    caller-check URL): what a test waits to see start, then to see gone."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if all(marker in cmdline for marker in markers) and state != "Z":
            pids.append(int(proc.name))
    return pids


@dataclass
class Platform:
    url: str
    token: str
    host_name: str
    env: dict[str, str]
    logs: Path
    port: int
    worker_metrics_port: int
    procs: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=30)

    def start(self, name: str, argv: list[str]) -> None:
        self.procs[name] = start_process(argv, self.env, self.logs / f"{name}.log", REPO)

    def stop(self) -> None:
        stop_processes(self.procs.values(), grace_seconds=20)

    def output(self) -> str:
        return "\n".join(f"--- {p.name} ---\n{p.read_text(errors='replace')[-4000:]}" for p in self.logs.glob("*.log"))

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 120.0) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for name, proc in self.procs.items():
                if proc.poll() is not None:
                    pytest.fail(f"{name} exited with {proc.returncode} while waiting for {what}\n{self.output()}")
            value = check()
            if value:
                return value
            time.sleep(0.3)
        pytest.fail(f"timed out after {timeout:g} s waiting for {what}\n{self.output()}")

    def submit(self, spec: dict[str, Any]) -> int:
        with self.client() as http:
            response = http.post("/api/v1/jobs", json=spec)
        assert response.status_code == 201, response.text
        return int(response.json()["id"])

    def job(self, job_id: int) -> dict[str, Any]:
        with self.client() as http:
            response = http.get(f"/api/v1/jobs/{job_id}")
        assert response.status_code == 200, response.text
        return dict(response.json())

    def wait_status(self, job_id: int, statuses: tuple[str, ...], timeout: float = 120.0) -> dict[str, Any]:
        def reached() -> dict[str, Any] | None:
            job = self.job(job_id)
            return job if job["status"] in statuses else None

        return dict(self.wait_for(f"job {job_id} to be {'/'.join(statuses)}", reached, timeout))


def prepare(tmp_path: Path, database_url: str, broker_url: str, tiny_model: Path) -> Platform:
    """The environment of a platform under `tmp_path/home`, nothing started yet.

    Empty URLs mean the embedded defaults (SQLite database and broker under the home).
    `tiny_model` is a built tiny model, linked where the trainer caches it, so no test builds it twice.
    """
    port, worker_metrics_port = free_port(), free_port()
    token = "sfu_" + secrets.token_urlsafe(24)
    host_name = f"it-{uuid.uuid4().hex[:10]}"
    home = tmp_path / "home"
    home.mkdir(parents=True)
    (home / tiny_model.name).symlink_to(tiny_model, target_is_directory=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {
        **os.environ,
        "SFUMATO_HOME": str(home),
        "SFUMATO_DATABASE_URL": database_url,
        "SFUMATO_BROKER_URL": broker_url,
        "SFUMATO_PUBLIC_URL": f"http://127.0.0.1:{port}",
        "SFUMATO_ADMIN_TOKEN": token,
        "SFUMATO_SECRET_KEY": secrets.token_hex(32),
        "SFUMATO_WORKER_HOSTNAME": host_name,
        "SFUMATO_WORKER_CPU_SLOTS": "3",
        "SFUMATO_HEARTBEAT_SECONDS": "1",
        "SFUMATO_SCHEDULER_INTERVAL_SECONDS": "0.5",
        "SFUMATO_CANCEL_GRACE_SECONDS": "5",
        "SFUMATO_WORKER_METRICS_PORT": str(worker_metrics_port),
    }
    return Platform(f"http://127.0.0.1:{port}", token, host_name, env, logs, port, worker_metrics_port)


def wait_until_host_online(platform: Platform) -> None:
    def host_online() -> bool:
        try:
            with platform.client() as http:
                hosts = http.get("/api/v1/hosts").json()["items"]
        except httpx.HTTPError:
            return False
        return any(h["name"] == platform.host_name and h["status"] == "online" for h in hosts)

    platform.wait_for("the server and the worker's host", host_online, timeout=90)


def launch_platform(tmp_path: Path, database_url: str, broker_url: str, tiny_model: Path) -> Platform:
    """Migrate, create the admin, then start uvicorn, `celery -A worker.celery_app worker` on the host's
    own queue, and the scheduler as separate processes; returns once the worker's host is online."""
    platform = prepare(tmp_path, database_url, broker_url, tiny_model)
    upgrade(database_url)
    engine = make_engine(database_url)
    with Session(engine) as session:
        ensure_admin(session, Settings(database_url=database_url, admin_token=platform.token))
    engine.dispose()

    me = [sys.executable, "-m", "sfumato.cli"]
    try:
        platform.start("server", [*me, "server", "--port", str(platform.port)])
        platform.start(
            "worker",
            [
                sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker",
                "--pool", "threads", "--concurrency", "3", "--queues", f"host.{platform.host_name}",
                "--hostname", f"{platform.host_name}@%h", "--without-gossip", "--without-mingle", "--loglevel", "info",
            ],
        )  # fmt: skip
        platform.start("scheduler", [*me, "scheduler"])
        wait_until_host_online(platform)
    except BaseException:
        platform.stop()
        raise
    return platform


def launch_up(tmp_path: Path, tiny_model: Path) -> Platform:
    """`sfumato up` on the embedded defaults; returns once its worker's host is online."""
    platform = prepare(tmp_path, "", "", tiny_model)
    try:
        platform.start("up", [sys.executable, "-m", "sfumato.cli", "up", "--port", str(platform.port)])
        wait_until_host_online(platform)
    except BaseException:
        platform.stop()
        raise
    return platform
