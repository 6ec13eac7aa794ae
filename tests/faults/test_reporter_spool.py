"""A trainer SIGKILLed while the server is away leaves its spool; the next attempt's reporter, in the same
output directory, ships those events first, each once, then its own."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from fault_harness import free_port

from trainer.reporting.reporter import OFFSET_NAME, SPOOL_NAME, Reporter

KILLED_TRAINER = """
import sys, time
from pathlib import Path
from trainer.reporting.reporter import Reporter
reporter = Reporter(Path(sys.argv[1]), sys.argv[2], "7", 1, "token", batch_interval_s=0.05, retries=0)
for step in range(1, 6):
    reporter.metrics(step, {"loss": float(step)})
print("spooled", flush=True)
time.sleep(60)
"""


class Recorder(BaseHTTPRequestHandler):
    bodies: list[dict] = []
    delay_s = 0.0

    def do_POST(self) -> None:
        time.sleep(Recorder.delay_s)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Recorder.bodies.append(body)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"stored": 1}')

    def log_message(self, format: str, *args: object) -> None:
        return


def test_the_next_attempt_ships_what_a_killed_trainer_left_in_its_spool(tmp_path: Path):
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    killed = subprocess.Popen([sys.executable, "-c", KILLED_TRAINER, str(tmp_path), url], stdout=subprocess.PIPE)
    assert killed.stdout is not None and killed.stdout.readline() == b"spooled\n"
    killed.send_signal(signal.SIGKILL)
    killed.wait(timeout=10)
    assert len((tmp_path / SPOOL_NAME).read_text().splitlines()) == 5

    Recorder.bodies = []
    server = ThreadingHTTPServer(("127.0.0.1", port), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        resumed = Reporter(tmp_path, url, "7", 2, "token", batch_interval_s=0.05)
        resumed.metrics(3, {"loss": 30.0})
        resumed.close(timeout_s=20)
    finally:
        server.shutdown()
        server.server_close()

    sent = Counter((body["attempt"], point["step"]) for body in Recorder.bodies for point in body["steps"])
    assert sent == {(1, 1): 1, (1, 2): 1, (1, 3): 1, (1, 4): 1, (1, 5): 1, (2, 3): 1}
    assert Recorder.bodies[0]["attempt"] == 1, "the killed attempt's events go first"
    assert not (tmp_path / SPOOL_NAME).exists() and not (tmp_path / OFFSET_NAME).exists()


def test_events_appended_while_the_reporter_ships_and_closes_all_arrive(tmp_path: Path):
    port = free_port()
    Recorder.bodies, Recorder.delay_s = [], 0.05  # a slow server: the training loop outruns the shipping
    server = ThreadingHTTPServer(("127.0.0.1", port), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        reporter = Reporter(tmp_path, f"http://127.0.0.1:{port}", "7", 1, "token", batch_interval_s=0.01)
        for step in range(1, 41):
            reporter.metrics(step, {"loss": float(step)})
            reporter.progress(step, 40, 0.5, 1.0)
        reporter.close(timeout_s=30)
    finally:
        Recorder.delay_s = 0.0
        server.shutdown()
        server.server_close()

    steps = [point["step"] for body in Recorder.bodies if "steps" in body for point in body["steps"]]
    assert sorted(steps) == list(range(1, 41))
    assert not (tmp_path / SPOOL_NAME).exists()
