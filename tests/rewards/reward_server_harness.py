"""Real reward servers for tests: `sfumato reward-server` processes, and peers that break the protocol.

A server is started in its own session and read until it prints ``listening on <url>``; stopping it kills
its process group. The misbehaving peers are plain HTTP servers on threads that answer each score request
the way a broken or hostile reward server would.
"""

from __future__ import annotations

import json
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

REPO = Path(__file__).resolve().parents[2]
LISTENING = re.compile(r"listening on (http://\S+)")


@dataclass
class RewardServer:
    proc: subprocess.Popen[str]
    url: str

    def kill(self) -> None:
        """SIGKILL, as a crashed host would end it."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def metrics(self) -> dict[str, float]:
        """Every sample of GET /metrics by name with its labels, e.g. ``sfumato_reward_batch_size_count``."""
        text = httpx.get(f"{self.url}/metrics", timeout=10).text
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
            return RewardServer(proc, found.group(1))
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


class Peer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, answers: list[tuple[int, bytes]], trickle: bool = False) -> None:
        super().__init__(("127.0.0.1", 0), PeerHandler)
        self.answers = answers  # one per request; the last one repeats
        self.trickle = trickle
        self.requests = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class PeerHandler(BaseHTTPRequestHandler):
    server: Peer

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        peer = self.server
        status, body = peer.answers[min(peer.requests, len(peer.answers) - 1)]
        peer.requests += 1
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body) + (10_000 if peer.trickle else 0)))
        self.end_headers()
        if not peer.trickle:
            self.wfile.write(body)
            return
        try:  # a slow-loris answer: a byte every 50 ms, never complete
            for _ in range(10_000):
                self.wfile.write(b" ")
                self.wfile.flush()
                time.sleep(0.05)
        except OSError:
            return

    def log_message(self, format: str, *args: object) -> None:
        return


@contextmanager
def misbehaving_peer(*answers: tuple[int, object], trickle: bool = False) -> Iterator[Peer]:
    """A server answering its n-th score request with ``answers[n]`` (JSON-encoded unless bytes)."""
    encoded = [(status, body if isinstance(body, bytes) else json.dumps(body).encode()) for status, body in answers]
    peer = Peer(encoded, trickle)
    thread = threading.Thread(target=peer.serve_forever, daemon=True)
    thread.start()
    try:
        yield peer
    finally:
        peer.shutdown()
        peer.server_close()
