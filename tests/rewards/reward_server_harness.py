"""Peers that break the reward protocol: plain HTTP servers on threads that answer each score request the
way a broken or hostile reward server would (real servers: sfumato/cli/reward_server_process.py)."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


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
