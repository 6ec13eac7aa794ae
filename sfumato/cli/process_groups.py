"""Platform processes in process groups of their own: started so that stopping one stops its children (a
server's workers, a worker's trainers), stopped with SIGTERM and, after a grace, SIGKILL. What runs a whole
platform from outside it (the benchmarks, the tests' harness) starts and stops its processes with these."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path


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
