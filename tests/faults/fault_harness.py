"""Platforms whose processes a test kills and restarts: a server, a scheduler and several workers posing as
hosts, on a PostgreSQL and a Redis the test may start itself (on free ports, never the shared ones).

Built on tests/platform_harness.py (the same environment and process handling as the integration tests).
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from platform_harness import TINY_SPEC, Platform, free_port, prepare
from sqlalchemy import create_engine
from sqlalchemy.orm import Session

from server.config import Settings
from server.db import make_engine
from server.migrate import upgrade
from server.services.auth import ensure_admin
from server.services.metric_history import metric_history
from server.services.metric_reads import metric_keys

# Short clocks so a fault plays out in seconds: heartbeats, lost hosts, scheduler passes, lost tasks.
FAST_CLOCKS = {
    "SFUMATO_HEARTBEAT_SECONDS": "0.5",
    "SFUMATO_HOST_LOST_AFTER_SECONDS": "4",
    "SFUMATO_SCHEDULER_INTERVAL_SECONDS": "0.3",
    "SFUMATO_SCHEDULED_TIMEOUT_SECONDS": "15",
    "SFUMATO_CANCEL_GRACE_SECONDS": "3",
    "SFUMATO_WORKER_METRICS_PORT": "0",
}


def tiny_spec(total_steps: int, **sections: Any) -> dict[str, Any]:
    """The tiny example with few, cheap steps; sections given replace the example's."""
    spec: dict[str, Any] = json.loads(TINY_SPEC.read_text())
    spec["algorithm"].update(total_steps=total_steps, sampling_steps=4, group_size=2, prompts_per_step=1)
    spec["samples"] = {"every": 1, "count": 0}
    spec["checkpoint"] = {"every": 0}
    spec.update(sections)
    return spec


class Cluster:
    """A platform with named worker hosts; processes can be killed and started again."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.worker_envs: dict[str, dict[str, str]] = {}

    @property
    def url(self) -> str:
        return self.platform.url

    def start(self, name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        out = open(self.platform.logs / f"{name}.log", "ab")  # noqa: SIM115 - closed with the process
        repo = Path(__file__).resolve().parents[2]
        self.platform.procs[name] = subprocess.Popen(
            argv, env=env or self.platform.env, cwd=repo, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )
        out.close()

    def start_server(self) -> None:
        """Returns once the server answers."""
        self.start("server", [sys.executable, "-m", "sfumato.cli", "server", "--port", str(self.platform.port)])
        wait_for_port(self.platform.port, timeout=90)

    def start_scheduler(self, name: str = "scheduler") -> None:
        self.start(name, [sys.executable, "-m", "sfumato.cli", "scheduler"])

    def start_worker(self, host: str, slots: int = 1, **settings: str) -> None:
        """`settings`: SFUMATO_* settings of this host only (its own artifact root, as a separate machine has)."""
        env = {**self.platform.env, "SFUMATO_WORKER_HOSTNAME": host, "SFUMATO_WORKER_CPU_SLOTS": str(slots), **settings}
        self.worker_envs[host] = env
        argv = [
            sys.executable, "-m", "celery", "-A", "worker.celery_app", "worker", "--pool", "threads",
            "--concurrency", str(slots), "--queues", f"host.{host}", "--hostname", f"{host}@%h",
            "--without-gossip", "--without-mingle", "--loglevel", "info",
        ]  # fmt: skip
        self.start(f"worker-{host}", argv, env)

    def kill(self, name: str, sig: signal.Signals = signal.SIGKILL) -> None:
        """Signal the process itself (not its group: its trainers must die as its children do)."""
        proc = self.platform.procs.pop(name)
        proc.send_signal(sig)
        proc.wait(timeout=30)

    def stop(self, name: str) -> None:
        proc = self.platform.procs.pop(name)
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)

    def hosts(self) -> list[dict[str, Any]]:
        try:
            with self.platform.client() as http:
                return list(http.get("/api/v1/hosts").json()["items"])
        except (httpx.HTTPError, KeyError, ValueError):
            return []

    def wait_hosts_online(self, names: list[str], timeout: float = 90) -> None:
        def online() -> bool:
            status = {h["name"]: h["status"] for h in self.hosts()}
            return all(status.get(name) == "online" for name in names)

        self.platform.wait_for(f"hosts {names} online", online, timeout)

    def wait_for(self, what: str, check: Callable[[], Any], timeout: float = 120) -> Any:
        return self.platform.wait_for(what, check, timeout)

    def submit(self, spec: dict[str, Any]) -> int:
        return self.platform.submit(spec)

    def job(self, job_id: int) -> dict[str, Any]:
        return self.platform.job(job_id)

    def wait_done(self, job_id: int, timeout: float = 120) -> dict[str, Any]:
        return self.platform.wait_status(job_id, ("succeeded", "failed", "cancelled"), timeout)

    def output(self) -> str:
        return self.platform.output()


def launch_cluster(
    tmp_path: Path,
    database_url: str,
    broker_url: str,
    tiny_model: Path,
    workers: dict[str, int],
    env: dict[str, str] | None = None,
) -> Cluster:
    """Migrate, create the admin, start the server, one scheduler and a worker per host (name → CPU slots)."""
    platform = prepare(tmp_path, database_url, broker_url, tiny_model)
    platform.env.update(FAST_CLOCKS)
    platform.env.update(env or {})
    upgrade(database_url)
    engine = make_engine(database_url)
    with Session(engine) as session:
        ensure_admin(session, Settings(database_url=database_url, admin_token=platform.token))
    engine.dispose()
    cluster = Cluster(platform)
    try:
        cluster.start_server()
        cluster.start_scheduler()
        for host, slots in workers.items():
            cluster.start_worker(host, slots)
        cluster.wait_hosts_online(list(workers))
    except BaseException:
        platform.stop()
        raise
    return cluster


@dataclass
class OwnRedis:
    """A redis-server of the test's own, without persistence: a restart loses every queued message."""

    folder: Path
    port: int
    proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                "--dir", str(self.folder)]  # fmt: skip
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wait_for_port(self.port)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=20)


@dataclass
class OwnPostgres:
    """A PostgreSQL cluster of the test's own in a temporary folder (run as user postgres when we are root)."""

    folder: Path
    port: int

    @property
    def url(self) -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, *argv: str) -> None:
        command = list(argv)
        if os.geteuid() == 0:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=120)

    def init(self) -> None:
        if os.geteuid() == 0:
            entry = pwd.getpwnam("postgres")
            os.chown(self.folder, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.folder / "data"), "-U", "postgres", "--auth=trust", "--no-sync")

    def start(self) -> None:
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-o", options, "-l", str(self.folder / "log"), "-w",
                  "start")  # fmt: skip

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.folder / "data"), "-m", "fast", "-w", "stop")


def wait_for_port(port: int, timeout: float = 20) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    pytest.fail(f"nothing listens on port {port} after {timeout:g} s")


def own_postgres_folder() -> Path:
    """Outside pytest's private temporary folder, which user postgres cannot enter."""
    return Path(tempfile.mkdtemp(prefix="sfumato-pg-", dir="/tmp"))


def remove_folder(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


TRAINING_KEYS = frozenset({"reward/mean", "loss", "kl", "grad_norm", "time/step"})  # logged every step


# On a CPU the trainer measures a step's memory on each attempt's first step only (the profiler slows a step
# tenfold; trainer/run.py): those keys must hold step 1 and no step twice, and may skip the others.
ATTEMPT_START_PREFIX = "memory/"


def whole(key: str, steps: list[int], expected: list[int]) -> bool:
    if key.startswith(ATTEMPT_START_PREFIX):
        return steps[:1] == [1] and len(set(steps)) == len(steps) and set(steps) <= set(expected)
    return steps == expected


def steps_off_per_key(database_url: str, job_id: int, total_steps: int) -> dict[str, list[int]]:
    """Every metric key whose live steps are not 1..total_steps once each, with its live steps (a doubled step
    listed twice); empty when every key the run logged is whole. A run that logged no training keys at all is
    reported as such, so an empty store never passes."""
    live: dict[str, list[int]] = {}
    for key, step, _attempt, superseded in stored_points(database_url, job_id):
        if not superseded:
            live.setdefault(key, []).append(step)
    expected = list(range(1, total_steps + 1))
    off = {key: sorted(steps) for key, steps in live.items() if not whole(key, sorted(steps), expected)}
    for key in TRAINING_KEYS - live.keys():
        off[key] = []
    return off


def stored_points(database_url: str, job_id: int) -> list[tuple[str, int, int, bool]]:
    """Every stored metric point of a job, whichever attempt reported it: (key, step, attempt, superseded)."""
    engine = create_engine(database_url)
    try:
        with Session(engine) as session:
            return [
                (key, point.step, point.attempt, not point.current)
                for key in metric_keys(session, job_id)
                for point in metric_history(session, job_id, key, -1, 100_000)
            ]
    finally:
        engine.dispose()


def free_ports(count: int) -> list[int]:
    return [free_port() for _ in range(count)]
