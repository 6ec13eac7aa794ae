"""Platform processes in process groups of their own: started so that stopping one stops its children (a
server's workers, a worker's trainers), stopped with SIGTERM and, after a grace, SIGKILL. What runs a whole
platform from outside it (the benchmarks, the tests' harness) starts and stops its processes with these."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path

import httpx


def start_process(argv: list[str], env: dict[str, str], log: Path, cwd: Path) -> subprocess.Popen[bytes]:
    """A platform process in its own session (so stopping it stops its children), output appended to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(argv, env=env, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def stop_processes(procs: Iterable[subprocess.Popen[bytes]], grace_seconds: float) -> None:
    """SIGTERM every process group, wait up to `grace_seconds` for each, then SIGKILL."""
    procs = list(procs)
    for proc in procs:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
    for proc in procs:
        try:
            proc.wait(timeout=grace_seconds)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_until_healthy(url: str, proc: subprocess.Popen[bytes], log: Path, timeout_s: float = 60) -> None:
    """Return once the server at `url` answers GET /api/v1/health with 200; fail with the tail of its log when
    its process exits first or `timeout_s` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            if httpx.get(f"{url}/api/v1/health", timeout=2).status_code == 200:
                return
        except httpx.TransportError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the server at {url} did not start:\n{log.read_text()[-3000:]}")
        time.sleep(0.2)
