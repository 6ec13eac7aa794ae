"""A reward server started as a child process: `sfumato reward-server ARGS`, once it prints its URL.

The tests and `make bench-rewards` start real servers this way; stopping one kills its process group, as a
crashed host would end it.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]  # PYTHONPATH of the child: this checkout
LISTENING = re.compile(r"listening on (http://\S+)")
SERVICE_TOKEN_ENV = "SFUMATO_REWARD_SERVICE_TOKEN"  # the server's --token-env unless told otherwise


@dataclass
class RewardServer:
    proc: subprocess.Popen[str]
    url: str
    service_token: str | None = None  # what /metrics asks for, when the server was given one

    def kill(self) -> None:
        """SIGKILL, as a crashed host would end it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def metrics(self) -> dict[str, float]:
        """Every sample of GET /metrics by name with its labels, e.g. ``sfumato_reward_batch_size_count``."""
        headers = {"Authorization": f"Bearer {self.service_token}"} if self.service_token else None
        response = httpx.get(f"{self.url}/metrics", headers=headers, timeout=10)
        response.raise_for_status()
        text = response.text
        samples = {}
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
                samples[sample.name + (f"{{{labels}}}" if labels else "")] = sample.value
        return samples


def start_reward_server(*args: str, env: dict[str, str] | None = None, timeout_s: float = 90) -> RewardServer:
    """``sfumato reward-server ARGS`` (``--port 0`` unless given), once it listens."""
    argv = [sys.executable, "-m", "sfumato.cli", "reward-server", *args]
    if "--port" not in args:
        argv += ["--port", "0"]
    environment = {**os.environ, "PYTHONPATH": str(REPO), "OMP_NUM_THREADS": "1", **(env or {})}
    proc = subprocess.Popen(argv, cwd=REPO, env=environment, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + timeout_s
    seen = []
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        seen.append(line)
        if found := LISTENING.search(line):
            threading.Thread(target=proc.stdout.read, daemon=True).start()  # keep draining its output
            token_env = args[args.index("--token-env") + 1] if "--token-env" in args else SERVICE_TOKEN_ENV
            return RewardServer(proc, found.group(1), environment.get(token_env) or None)
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL)
    raise RuntimeError("the reward server did not start:\n" + "".join(seen)[-3000:])


@contextmanager
def reward_server(*args: str, env: dict[str, str] | None = None) -> Iterator[RewardServer]:
    server = start_reward_server(*args, env=env)
    try:
        yield server
    finally:
        server.kill()
