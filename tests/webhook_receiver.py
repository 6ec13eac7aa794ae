"""A webhook receiver on 127.0.0.1: a real HTTP server on a thread that answers the statuses it is given, in turn
(then 200), and keeps the headers and body of every POST it gets."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Receiver:
    url: str
    statuses: list[int]
    received: list[tuple[dict[str, str], bytes]] = field(default_factory=list)
    on_post: Callable[[], None] = lambda: None  # run before answering


@contextmanager
def receiving() -> Iterator[Receiver]:
    state = Receiver(url="", statuses=[])

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            state.received.append((dict(self.headers.items()), body))
            state.on_post()
            self.send_response(state.statuses.pop(0) if state.statuses else 200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
