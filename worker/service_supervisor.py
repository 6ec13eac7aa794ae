"""Runs one generation of a reward service: starts `reward-server` as a process group (an argument list, never
a shell), waits for it to bind, health-checks it, scrapes its metrics, restarts it when it dies, and stops it
when the service is stopped or the worker shuts down.

The server runs in its own session with SIGTERM on the worker thread's death (worker.supervisor), so a killed
worker leaves no server behind. Restarts reuse the first launch's port: jobs keep the URL they were given.
"""

from __future__ import annotations

import logging
import re
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import IO, TypeVar

import httpx
from sqlalchemy.exc import SQLAlchemyError

from server.models import utcnow
from server.services import service_runs
from server.services.service_runs import ServicePlan
from worker.launch import SCRUBBED_NAMES, SCRUBBED_PREFIXES
from worker.service_metrics import parse_scrape
from worker.supervisor import SessionScope, signal_group, terminate_with_parent

log = logging.getLogger(__name__)

TOKEN_ENV = "SFUMATO_REWARD_SERVICE_TOKEN"
LISTENING = re.compile(r"listening on (https?://\S+)")
POLL_SECONDS = 1.0
SCRAPE_SECONDS = 2.0
HEALTH_TIMEOUT_SECONDS = 2.0
START_TIMEOUT_SECONDS = 600.0  # a large reward model loads for minutes; never answering at all is a failed start
UNHEALTHY_AFTER = 3  # failed health checks in a row before a healthy service is marked unhealthy
RESTART_AFTER = 15  # ... and before its server is killed and started again
MAX_BACKOFF_SECONDS = 30.0
TAIL_LINES = 60
T = TypeVar("T")


@dataclass
class ServiceLaunch:
    """How the worker starts the reward server: its interpreter, where its callers are checked, its address."""

    python: str
    auth_url: str
    bind_host: str
    token: str
    grace_seconds: float


def reward_server_argv(plan: ServicePlan, launch: ServiceLaunch, port: int) -> list[str]:
    """`python -m sfumato.cli reward-server --reward R [--path P] --host H --port N --device D --token-env E
    --auth-url U` (docs/rewards.md); the CLI imports the server from the trainer room when it runs."""
    device = "cuda" if plan.device_type == "cuda" else "cpu"
    argv = [launch.python, "-m", "sfumato.cli", "reward-server", "--reward", plan.reward]
    if plan.path:
        argv += ["--path", plan.path]
    argv += ["--host", launch.bind_host, "--port", str(port), "--device", device]
    return [*argv, "--token-env", TOKEN_ENV, "--auth-url", launch.auth_url]


def service_env(plan: ServicePlan, base: Mapping[str, str], token: str) -> dict[str, str]:
    """The worker's environment, scrubbed as a trainer's is, with the service's devices and token."""
    env = {k: v for k, v in base.items() if not k.startswith(SCRUBBED_PREFIXES) and k not in SCRUBBED_NAMES}
    env.update({TOKEN_ENV: token, "PYTHONUNBUFFERED": "1"})
    if plan.device_type == "cuda":
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in plan.device_indices)
    else:
        env["CUDA_VISIBLE_DEVICES"] = ""
        env["OMP_NUM_THREADS"] = str(max(1, len(plan.device_indices)))
    return env


@dataclass
class _Server:
    """One launch of the server process, its output read into the log file and a tail."""

    proc: subprocess.Popen[bytes]
    url: str | None = None
    bound: threading.Event = field(default_factory=threading.Event)
    tail: deque[str] = field(default_factory=lambda: deque(maxlen=TAIL_LINES))

    def read(self, stream: IO[bytes], log_file: IO[str]) -> None:
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
            log_file.write(line + "\n")
            log_file.flush()
            self.tail.append(line)
            found = LISTENING.search(line)
            if found and self.url is None:
                self.url = found.group(1).rstrip("/")
                self.bound.set()
        self.bound.set()


class ServiceSupervisor:
    def __init__(
        self,
        plan: ServicePlan,
        launch: ServiceLaunch,
        base_env: Mapping[str, str],
        session_scope: SessionScope,
        shutdown: threading.Event,
    ) -> None:
        self.plan = plan
        self.launch = launch
        self.env = service_env(plan, base_env, launch.token)
        self.session_scope = session_scope
        self.shutdown = shutdown
        self.http = httpx.Client(timeout=HEALTH_TIMEOUT_SECONDS)

    def _db(self, write: Callable[..., T], *args: object) -> T | None:
        """`write(session, service_id, generation, *args)` in one transaction; None when the database is away
        (the server keeps serving meanwhile)."""
        try:
            with self.session_scope() as session:
                return write(session, self.plan.service_id, self.plan.generation, *args)
        except SQLAlchemyError as exc:
            log.warning("service %s: database unavailable (%s)", self.plan.service_id, exc.__class__.__name__)
            return None

    def run(self) -> str | None:
        """Launch, watch and relaunch until stopped; returns why it stopped."""
        plan = self.plan
        port, launches = 0, 0
        with open(plan.log_path, "a", encoding="utf-8") as log_file:
            while True:
                launches += 1
                argv = reward_server_argv(plan, self.launch, port)
                log_file.write(f"sfumato: $ {' '.join(argv)}\n")
                log_file.flush()
                server = self._start(argv, log_file)
                stopped_for, why, was_healthy = self._watch(server, launches)
                self._stop(server)
                if server.url and port == 0:
                    port = int(server.url.rsplit(":", 1)[1])
                log_file.write(f"sfumato: server exited with code {server.proc.returncode} ({stopped_for or why})\n")
                log_file.flush()
                if stopped_for is not None:
                    return stopped_for
                again = self._db(service_runs.mark_died, why, list(server.tail), was_healthy)
                if not again:
                    return None
                if self.shutdown.wait(min(MAX_BACKOFF_SECONDS, 2.0 ** min(launches, 5))):
                    return service_runs.STOP_SHUTDOWN

    def _start(self, argv: list[str], log_file: IO[str]) -> _Server:
        proc = subprocess.Popen(
            argv,
            env=self.env,
            cwd=self.plan.run_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=terminate_with_parent,  # only an async-signal-safe prctl call
        )
        assert proc.stdout is not None
        server = _Server(proc)
        threading.Thread(target=server.read, args=(proc.stdout, log_file), daemon=True).start()
        log.info("service %s generation %s: pid %s", self.plan.service_id, self.plan.generation, proc.pid)
        return server

    def _watch(self, server: _Server, launch: int) -> tuple[str | None, str, bool]:
        """Until the server must stop (its reason), or dies (why, and whether it was healthy this launch)."""
        started = time.monotonic()
        healthy, misses, next_scrape, listening_marked = False, 0, 0.0, False
        while True:
            stopped_for = self._db(service_runs.stop_reason)
            if stopped_for is None and self.shutdown.is_set():
                stopped_for = service_runs.STOP_SHUTDOWN
            if stopped_for is not None:
                return stopped_for, "", healthy
            if server.proc.poll() is not None:
                return None, f"exited with code {server.proc.returncode}", healthy
            if server.url and not listening_marked:
                listening_marked = bool(self._db(service_runs.mark_listening, server.url))
            if server.url and self._answers(server.url):
                misses = 0
                if not healthy or time.monotonic() >= next_scrape:
                    self._db(service_runs.mark_healthy)
                healthy = True
                if time.monotonic() >= next_scrape:
                    next_scrape = time.monotonic() + SCRAPE_SECONDS
                    self._scrape(server.url, launch)
            elif healthy:
                misses += 1
                why = f"did not answer GET /healthz {misses} times in a row"
                if misses == UNHEALTHY_AFTER:
                    self._db(service_runs.mark_unhealthy, why)
                if misses >= RESTART_AFTER:
                    return None, f"was killed: it {why}", healthy
            elif time.monotonic() - started > START_TIMEOUT_SECONDS:
                return None, f"did not answer GET /healthz within {START_TIMEOUT_SECONDS:g} s of starting", False
            time.sleep(POLL_SECONDS)

    def _answers(self, url: str) -> bool:
        try:
            return self.http.get(f"{url}/healthz").status_code == 200
        except httpx.HTTPError:
            return False

    def _scrape(self, url: str, launch: int) -> None:
        try:
            response = self.http.get(f"{url}/metrics", headers={"Authorization": f"Bearer {self.launch.token}"})
            response.raise_for_status()
            scrape = parse_scrape(response.text, launch, utcnow())
        except (httpx.HTTPError, ValueError) as exc:
            log.warning("service %s: could not read %s/metrics: %s", self.plan.service_id, url, exc)
            return
        self._db(service_runs.record_scrape, scrape)

    def _stop(self, server: _Server) -> None:
        """SIGTERM to the server's process group, SIGKILL after the grace period."""
        if server.proc.poll() is None:
            signal_group(server.proc, signal.SIGTERM)
            try:
                server.proc.wait(timeout=self.launch.grace_seconds)
            except subprocess.TimeoutExpired:
                signal_group(server.proc, signal.SIGKILL)
                server.proc.wait()
        signal_group(server.proc, signal.SIGKILL)  # whatever it left behind
