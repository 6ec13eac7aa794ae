"""The reporter against a real HTTP server: batches metrics, survives the server being away."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from trainer.reporting import reporter as reporter_module
from trainer.reporting.reporter import SPOOL_NAME, Reporter
from trainer.spec.ingest import MetricBatch


class Recorder(BaseHTTPRequestHandler):
    received: list[tuple[str, dict[str, str], bytes]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        Recorder.received.append((self.path, dict(self.headers), body))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(b'{"stored": 1}')

    def log_message(self, format: str, *args: object) -> None:
        return


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, port: int) -> None:
        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Recorder)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def port() -> Iterator[int]:
    Recorder.received = []
    yield free_port()


def metric_steps(path_prefix: str = "/api/v1/ingest/job-7/metrics") -> list[int]:
    steps = []
    for path, _, body in Recorder.received:
        if path == path_prefix:
            steps += [point["step"] for point in json.loads(body)["steps"]]
    return steps


def make_reporter(tmp_path: Path, port: int) -> Reporter:
    return Reporter(tmp_path, f"http://127.0.0.1:{port}", "job-7", 2, "secret", batch_interval_s=0.05, retries=0)


def wait_for(condition, timeout_s: float = 5.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_metrics_arrive_batched_with_the_job_token(tmp_path: Path, port: int) -> None:
    server = Server(port)
    try:
        reporter = make_reporter(tmp_path, port)
        for step in range(1, 6):
            reporter.metrics(step, {"reward/mean": step / 10, "loss": float("nan")})
        reporter.progress(5, 10, 0.5, 3.0)
        reporter.sample(5, "eval", "a red apple", 0, 0.7, b"\x89PNG fake")
        reporter.artifact("model", "model", 5, "model")
        reporter.close()
    finally:
        server.stop()
    assert metric_steps() == [1, 2, 3, 4, 5]
    batches = [json.loads(b) for p, _, b in Recorder.received if p.endswith("/metrics")]
    assert len(batches) < 5
    assert all(MetricBatch.model_validate(b).attempt == 2 for b in batches)  # what the server validates with
    assert "loss" not in batches[0]["steps"][0]["values"]  # NaN is not sent
    assert all(h["Authorization"] == "Bearer secret" for _, h, _ in Recorder.received)
    paths = {p.rsplit("/", 1)[1] for p, _, _ in Recorder.received}
    assert paths == {"metrics", "progress", "samples", "artifacts"}
    sample_body = next(b for p, _, b in Recorder.received if p.endswith("/samples"))
    assert b"a red apple" in sample_body and b"\x89PNG fake" in sample_body


def test_server_away_spools_then_flushes_when_it_returns(tmp_path: Path, port: int) -> None:
    reporter = make_reporter(tmp_path, port)
    reporter.metrics(1, {"reward/mean": 0.1})
    reporter.metrics(2, {"reward/mean": 0.2})
    wait_for(lambda: (tmp_path / SPOOL_NAME).exists())
    server = Server(port)
    try:
        wait_for(lambda: metric_steps() == [1, 2])  # the spool flushed once the server returned
        reporter.metrics(3, {"reward/mean": 0.3})
        wait_for(lambda: metric_steps() == [1, 2, 3])
        reporter.close()
    finally:
        server.stop()
    assert not (tmp_path / SPOOL_NAME).exists()


def test_training_goes_on_while_a_request_to_a_silent_server_hangs(tmp_path: Path, port: int) -> None:
    """The server takes the connection and never answers: the training thread's next steps are spooled at
    once, not after the request's timeout (600 s here)."""
    with socket.create_server(("127.0.0.1", port)) as silent:
        reporter = Reporter(tmp_path, f"http://127.0.0.1:{port}", "job-7", 2, "secret", batch_interval_s=0.05,
                            timeout_s=600, retries=0)  # fmt: skip
        reporter.metrics(1, {"reward/mean": 0.1})
        hanging, _ = silent.accept()  # the reporter's request is in flight
        trained = threading.Event()

        def train() -> None:
            reporter.metrics(2, {"reward/mean": 0.2})
            reporter.metrics(3, {"reward/mean": 0.3})
            trained.set()

        threading.Thread(target=train, daemon=True).start()
        try:
            assert trained.wait(timeout=30), "a training step waited on the hanging request"
            spooled = [json.loads(line)["json"] for line in (tmp_path / SPOOL_NAME).read_text().splitlines()]
            assert [point["step"] for batch in spooled for point in batch["steps"]] == [1, 2, 3]
        finally:
            hanging.close()
            silent.close()  # requests still waiting to be taken are refused
            reporter.close(timeout_s=1)


def test_unsent_events_stay_in_the_spool_when_the_server_never_returns(tmp_path: Path, port: int) -> None:
    reporter = make_reporter(tmp_path, port)
    reporter.metrics(1, {"reward/mean": 0.1})
    reporter.close(timeout_s=5)
    lines = (tmp_path / SPOOL_NAME).read_text().splitlines()
    assert json.loads(lines[0])["json"]["steps"][0]["step"] == 1


def test_without_a_server_url_it_only_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reporter = Reporter(tmp_path, None, None, 1, None)
    reporter.metrics(1, {"reward/mean": 0.1})
    reporter.print("step 1/1 reward 0.1")
    reporter.close()
    assert "step 1/1" in capsys.readouterr().out
    assert not (tmp_path / SPOOL_NAME).exists()


def test_a_nan_progress_is_sent_as_null_and_blocks_nothing_after_it(tmp_path: Path, port: int) -> None:
    server = Server(port)
    try:
        reporter = make_reporter(tmp_path, port)
        reporter.progress(1, 10, float("nan"), float("inf"))
        reporter.metrics(1, {"reward/mean": 0.5})
        reporter.close()
    finally:
        server.stop()
    progress = [json.loads(b) for p, _, b in Recorder.received if p.endswith("/progress")]
    assert progress == [{"attempt": 2, "step": 1, "total_steps": 10, "reward": None, "samples_per_s": None}]
    assert metric_steps() == [1]


def test_a_step_the_payload_refuses_is_printed_and_dropped_and_training_goes_on(
    tmp_path: Path, port: int, capsys: pytest.CaptureFixture[str]
) -> None:
    server = Server(port)
    try:
        reporter = make_reporter(tmp_path, port)
        reporter.metrics(1, {"k" * 201: 0.5})  # a key longer than MetricKey allows
        reporter.metrics(2, {"loss": 0.5})
        reporter.close()
    finally:
        server.stop()
    assert metric_steps() == [2]
    assert "reporter: metrics of step 1 not sent" in capsys.readouterr().out


def test_a_second_of_steps_goes_as_one_metrics_batch_and_one_progress_report_with_the_latest_values(
    tmp_path: Path, port: int
) -> None:
    server = Server(port)
    try:
        reporter = Reporter(tmp_path, f"http://127.0.0.1:{port}", "job-7", 2, "secret", batch_interval_s=60)
        reporter.metrics(1, {"loss": 1.0})
        reporter.progress(1, 10, 0.25, 3.0)
        reporter.sample(1, "eval", "a red apple", 0, 0.7, b"\x89PNG fake")
        reporter.metrics(2, {"loss": 2.0})
        reporter.progress(2, 10, float("nan"), 4.0)
        reporter.close()  # the first shipping round: everything above is waiting in the spool
    finally:
        server.stop()
    assert [p.rsplit("/", 1)[1] for p, _, _ in Recorder.received] == ["metrics", "samples", "progress"]
    assert metric_steps() == [1, 2]
    progress = json.loads(Recorder.received[-1][2])
    assert progress == {"attempt": 2, "step": 2, "total_steps": 10, "reward": 0.25, "samples_per_s": 4.0}


def test_a_backlog_larger_than_the_reporter_holds_in_memory_all_arrives_in_order(
    tmp_path: Path, port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(reporter_module, "MAX_UNACKNOWLEDGED", 3)
    monkeypatch.setattr(reporter_module, "READ_CHUNK_BYTES", 16)  # shorter than a line: the read grows to one
    reporter = make_reporter(tmp_path, port)
    for step in range(1, 11):
        reporter.metrics(step, {"reward/mean": step / 10})
    server = Server(port)
    try:
        reporter.close()
    finally:
        server.stop()
    assert metric_steps() == list(range(1, 11))
