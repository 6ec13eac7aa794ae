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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
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


def alive(proc: psutil.Process) -> bool:
    """Running and not a zombie (an exited child its parent has not reaped yet)."""
    try:
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def own_processes(roots: Iterable[int], *markers: str) -> list[psutil.Process]:
    """The live processes among `roots` and all their descendants whose command line mentions every marker:
    only what this test started, never another platform's processes on the same machine."""
    found = []
    for root in roots:
        try:
            tree = psutil.Process(root)
            members = [tree, *tree.children(recursive=True)]
        except psutil.NoSuchProcess:
            continue
        for proc in members:
            try:
                cmdline = " ".join(proc.cmdline())
            except (psutil.NoSuchProcess, psutil.ZombieProcess, psutil.AccessDenied):
                continue
            if all(marker in cmdline for marker in markers) and alive(proc):
                found.append(proc)
    return found


def still_alive_after(procs: Iterable[psutil.Process], timeout: float) -> list[psutil.Process]:
    """Those of `procs` still alive once the others have exited or `timeout` seconds passed. The processes are
    the ones found earlier, so one that left the tree (an orphan adopted by init) is still waited for."""
    procs = list(procs)
    deadline = time.monotonic() + timeout
    while (left := [proc for proc in procs if alive(proc)]) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


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

    def processes(self, *markers: str) -> list[psutil.Process]:
        """This platform's live processes (those it started and their descendants) that mention every marker."""
        return own_processes((proc.pid for proc in self.procs.values()), *markers)

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


def prepare(tmp_path: Path, database_url: str, broker_url: str, tiny_model: Path | None) -> Platform:
    """The environment of a platform under `tmp_path/home`, nothing started yet.

    Empty URLs mean the embedded defaults (SQLite database and broker under the home).
    `tiny_model` is a built tiny model, linked where the trainer caches it, so no test builds it twice
    (None for a platform that trains nothing).
    """
    port, worker_metrics_port = free_port(), free_port()
    token = "sfu_" + secrets.token_urlsafe(24)
    host_name = f"it-{uuid.uuid4().hex[:10]}"
    home = tmp_path / "home"
    home.mkdir(parents=True)
    if tiny_model is not None:
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


def launch_server(tmp_path: Path, processes: int) -> Platform:
    """`sfumato server` alone with `processes` uvicorn processes on a migrated SQLite database; returns once it
    answers. Its log has one access line per request, naming the process that served it."""
    database_url = f"sqlite:///{tmp_path / 'sfumato.db'}"
    platform = prepare(tmp_path, database_url, "", None)
    upgrade(database_url)
    argv = [sys.executable, "-m", "sfumato.cli", "server", "--port", str(platform.port), "--workers", str(processes)]
    try:
        platform.start("server", argv)
        platform.wait_for("the server to answer", lambda: answers(f"{platform.url}/login"), timeout=60)
    except BaseException:
        platform.stop()
        raise
    return platform


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=5).is_success
    except httpx.HTTPError:
        return False


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
