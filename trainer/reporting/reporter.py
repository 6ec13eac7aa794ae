"""The reporter: the trainer's only door to the platform (docs/contracts.md).

Durable by construction: every event (a step's metrics, a sample, progress, an artifact) is first
appended to a spool file in the output directory, then a background thread ships the spool in
order and records, in a small offset file, how far the server has acknowledged. Training calls
never wait on the network. While the server is away the spool grows; when it returns the thread
catches up. A process that dies (the worker killed, the machine's OOM killer) leaves the spool and
its offset behind, and the next attempt's reporter, started with ``--resume`` in the same output
directory, sends the rest first. On exit the reporter waits (bounded) until the spool is shipped.

Cheap on the training thread: a call is a dict filter, one orjson line and one unbuffered `write`
(about ten microseconds), so the event is in the kernel's hands when the call returns and a SIGKILL
right after it loses nothing. Everything else (reading the spool back, batching, HTTP over the
standard library's http.client) is the background thread's, every 2 seconds (the pages poll as
often): the metric lines of a round go out as one batch, its samples, and its progress lines as one
report (the latest values; the server keeps only those), so a round costs the thread two or three
requests whatever the step rate. A background thread rather than a process: its work is about a
millisecond a round, mostly waiting on sockets with the GIL released, while a process would have to
be supervised and could outlive a killed trainer.

The server stores each point once under its natural key (job, key, step, attempt), so a batch sent
twice — acknowledged but the offset not yet written — stores nothing twice. Every line a human
should see is printed to stdout, the job log.

An artifact event is registered, then its bytes follow (artifact_upload.py): the file, or the folder as one tar
stream, resumed from the offset the server holds when a try was cut short; the event is acknowledged only once the
server holds the whole and has checked its SHA-256.

A reporter whose attempt is over (the platform sent the job back to the queue or started it again, and this
trainer still runs) is answered 409 with code ``attempt_superseded``: it prints that answer once and stops,
spooling and sending nothing more, and leaves the spool to the attempt that goes on. The progress of an earlier
attempt found in the spool is not sent: the server keeps only the current attempt's live fields.
"""

from __future__ import annotations

import atexit
import base64
import logging
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import orjson
from pydantic import ValidationError

from trainer.reporting.artifact_upload import UploadInterrupted, UploadRefused, upload_artifact
from trainer.reporting.ingest_client import IngestClient, TransportError
from trainer.spec.eval_task import EvaluationReport
from trainer.spec.ingest import (
    ATTEMPT_SUPERSEDED_CODE,
    ArtifactKind,
    ArtifactRecord,
    MetricBatch,
    MetricStep,
    ProgressReport,
    SampleForm,
    SampleKind,
)
from trainer.spec.probe_report import ProbeReport

log = logging.getLogger(__name__)

SPOOL_NAME = "reporter-spool.jsonl"
OFFSET_NAME = "reporter-spool.offset"
MAX_BACKOFF_S = 5.0
MAX_BATCH_STEPS = 500
MAX_UNACKNOWLEDGED = 2000  # spool lines the background thread holds in memory at once
READ_CHUNK_BYTES = 1 << 22
CLOSE_TIMEOUT_S = 120.0  # the longest a finished trainer waits for the server to take its last events
IN_FLIGHT_GRACE_S = 20.0  # a request under way when closing times out: its own timeouts and retries


class _Superseded(Exception):
    """The server said this reporter's attempt is over: the background thread stops."""


class Reporter:
    def __init__(
        self,
        output_dir: Path,
        api_url: str | None,
        job_id: str | None,
        attempt: int,
        token: str | None,
        *,
        batch_interval_s: float = 2.0,  # the pages poll every 2 s; each round costs the thread the same
        timeout_s: float = 5.0,
        retries: int = 2,
    ) -> None:
        self.enabled = bool(api_url and job_id)
        self.attempt = attempt
        self.output_dir = output_dir
        self.spool_path = output_dir / SPOOL_NAME
        self.offset_path = output_dir / OFFSET_NAME
        self.batch_interval_s = batch_interval_s
        self.retries = retries
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._superseded = threading.Event()
        self._backoff = 0.5
        self._give_up_at = 0.0
        self._thread: threading.Thread | None = None
        self._fd = -1  # the spool, appended to with one unbuffered write per event
        self._read_fd = -1  # the spool again, read back by the background thread
        # The background thread's view: lines read back but not yet acknowledged (end offset, request), and
        # how far the spool has been read.
        self._unacknowledged: list[tuple[int, dict[str, Any]]] = []
        self._read_to = 0
        if self.enabled:
            output_dir.mkdir(parents=True, exist_ok=True)
            base = f"{api_url.rstrip('/')}/api/v1/ingest/{job_id}"  # type: ignore[union-attr]
            self._client = IngestClient(base, token, timeout_s)
            self._fd = os.open(self.spool_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            self._read_fd = os.open(self.spool_path, os.O_RDONLY)
            self._read_to = self._shipped_offset()
            self._thread = threading.Thread(target=self._run, name="sfumato-reporter", daemon=True)
            self._thread.start()
            atexit.register(self.close)  # an exception ending the run still ships what was spooled

    @classmethod
    def from_environment(cls, output_dir: Path) -> Reporter:
        return cls(
            output_dir,
            os.environ.get("SFUMATO_API_URL"),
            os.environ.get("SFUMATO_JOB_ID"),
            int(os.environ.get("SFUMATO_JOB_ATTEMPT", "1")),
            os.environ.get("SFUMATO_JOB_TOKEN"),
        )

    @property
    def superseded(self) -> bool:
        """The server answered that this reporter's attempt is over; it reports nothing more."""
        return self._superseded.is_set()

    # --- called from the training loop: never waits on the network, never raises -----------
    def print(self, line: str) -> None:
        print(line, flush=True)

    def metrics(self, step: int, values: dict[str, float]) -> None:
        if not self.enabled:
            return
        clean = {k: float(v) for k, v in values.items() if math.isfinite(v)}
        try:
            point = MetricStep(step=step, wall_time=time.time(), values=clean)
        except ValidationError as exc:
            self.print(f"reporter: metrics of step {step} not sent: {exc}")
            return
        self._append({"kind": "metrics", "json": MetricBatch(attempt=self.attempt, steps=[point]).model_dump()})

    def sample(self, step: int, kind: SampleKind, prompt: str, seed: int, reward: float | None, png: bytes) -> None:
        if not self.enabled:
            return
        try:
            form = SampleForm(attempt=self.attempt, step=step, kind=kind, prompt=prompt, seed=seed, reward=reward)
        except ValidationError as exc:
            self.print(f"reporter: sample of step {step} not sent: {exc}")
            return
        self._append({"kind": "samples", "data": form.form_fields(), "image": base64.b64encode(png).decode()})

    def progress(self, step: int, total_steps: int, reward: float, samples_per_s: float) -> None:
        try:
            body = ProgressReport(
                attempt=self.attempt,
                step=step,
                total_steps=total_steps,
                reward=reward,
                # JSON has no NaN, and a throughput must not be negative: an unknown one is sent as null.
                samples_per_s=samples_per_s if math.isfinite(samples_per_s) else None,
            )
        except ValidationError as exc:
            self.print(f"reporter: progress of step {step} not sent: {exc}")
            return
        self._append({"kind": "progress", "json": body.model_dump()})

    def artifact(self, kind: ArtifactKind, name: str, step: int, path: str) -> None:
        self.print(f"artifact {kind} {name} at {path}")
        try:
            body = ArtifactRecord(attempt=self.attempt, kind=kind, name=name, step=step, path=path)
        except ValidationError as exc:
            self.print(f"reporter: artifact {name} not registered: {exc}")
            return
        self._append({"kind": "artifacts", "json": body.model_dump()})

    def probe(self, report: ProbeReport) -> None:
        """The advisor's probe report (POST .../probe), spooled like every other event."""
        self._append({"kind": "probe", "json": report.model_dump(mode="json")})

    def evaluation(self, report: EvaluationReport) -> None:
        """An evaluation job's scores (POST .../evaluation), spooled like every other event."""
        self._append({"kind": "evaluation", "json": report.model_dump(mode="json")})

    def close(self, timeout_s: float = CLOSE_TIMEOUT_S) -> None:
        """Wait until the spool is shipped, at most about `timeout_s`; then the spool goes. Unshipped events
        stay in it for the next attempt."""
        if self._thread is None:
            return
        self._give_up_at = time.monotonic() + timeout_s
        self._closing.set()
        self._wake.set()
        self._thread.join(timeout_s + IN_FLIGHT_GRACE_S)
        thread, self._thread = self._thread, None
        if thread.is_alive():
            return  # a request hangs; the daemon thread dies with the process, the spool stays
        self._client.close()
        os.close(self._read_fd)
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
            if self.superseded:
                return  # the spool is the attempt's that goes on
            if self._shipped_offset() >= self.spool_path.stat().st_size:
                self.spool_path.unlink()
                self.offset_path.unlink(missing_ok=True)

    def _append(self, request: dict[str, Any]) -> None:
        """One line, one write: in the kernel's hands when this returns, so it survives the process being
        killed. The lock only guards against close() running at the same moment (atexit)."""
        if not self.enabled:
            return
        line = memoryview(orjson.dumps(request, option=orjson.OPT_APPEND_NEWLINE))
        with self._lock:
            if self._fd < 0:
                return
            while line:
                line = line[os.write(self._fd, line) :]

    # --- background thread ---------------------------------------------------------------
    def _run(self) -> None:
        while True:
            self._wake.wait(self.batch_interval_s)
            self._wake.clear()
            try:
                drained = self._ship()
            except _Superseded:
                return
            except Exception:  # the reporter must never take training down
                log.exception("reporter failed; events kept in %s", self.spool_path)
                drained = False
            if self._closing.is_set() and (drained or time.monotonic() > self._give_up_at):
                return
            if not drained:
                time.sleep(self._backoff)
                self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)

    def _shipped_offset(self) -> int:
        try:
            return int(self.offset_path.read_text())
        except (OSError, ValueError):
            return 0

    def _acknowledge(self, offset: int) -> None:
        staging = self.offset_path.with_suffix(".tmp")
        staging.write_text(str(offset))
        os.replace(staging, self.offset_path)

    def _read_new(self) -> None:
        """Add the spool's complete lines past those read before to the unacknowledged ones, holding at most
        MAX_UNACKNOWLEDGED: a backlog from hours without the server stays on disk until its turn."""
        room = MAX_UNACKNOWLEDGED - len(self._unacknowledged)
        size = os.fstat(self._read_fd).st_size - self._read_to
        if room <= 0 or size <= 0:
            return
        chunk = min(size, READ_CHUNK_BYTES)
        data = os.pread(self._read_fd, chunk, self._read_to)
        while b"\n" not in data and chunk < size:  # a line longer than a chunk (a large sample image)
            chunk = min(size, chunk * 2)
            data = os.pread(self._read_fd, chunk, self._read_to)
        for raw in data.split(b"\n")[:-1][:room]:  # the last piece is empty, cut off, or still being written
            self._read_to += len(raw) + 1
            if raw.strip():
                self._unacknowledged.append((self._read_to, orjson.loads(raw)))

    def _ship(self) -> bool:
        """Send what is unacknowledged, oldest first, until nothing is: events appended meanwhile go too.
        True when the spool is all acknowledged."""
        self._read_new()
        while self._unacknowledged:
            if not self._send_in_order():
                return False
            self._read_new()
        self._backoff = 0.5
        return True

    def _send_in_order(self) -> bool:
        """Send the unacknowledged requests, acknowledging as it goes; a run of metric, sample and progress
        lines of one attempt goes as one metrics batch, the samples and one progress report."""
        while self._unacknowledged:
            count, requests = _next_group(self._unacknowledged, self.attempt)
            for request in requests:
                if not self._send_with_retries(request):
                    return False
            self._acknowledge(self._unacknowledged[count - 1][0])
            del self._unacknowledged[:count]
        return True

    def _send_with_retries(self, request: dict[str, Any]) -> bool:
        for attempt in range(self.retries + 1):
            if self._send(request):
                return True
            if attempt < self.retries:
                time.sleep(0.2 * (attempt + 1))
        return False

    def _send(self, request: dict[str, Any]) -> bool:
        """True when the server took it or refused it for good (4xx: retrying cannot help)."""
        try:
            if request["kind"] == "samples":
                png = base64.b64decode(request["image"])
                status, body = self._client.post_form(
                    "/samples", request["data"], "image", "sample.png", png, "image/png"
                )
            else:
                status, body = self._client.post_json(f"/{request['kind']}", orjson.dumps(request["json"]))
            if request["kind"] == "artifacts" and status < 300:
                self._upload(request["json"]["path"], orjson.loads(body))
        except (*TransportError, UploadInterrupted):
            return False
        if 400 <= status < 500:
            if status == 409 and _attempt(request) >= self.attempt and _code(body) == ATTEMPT_SUPERSEDED_CODE:
                self._stop_superseded(body)
            text = body[:200].decode(errors="replace")
            self.print(f"reporter: {request['kind']} refused with {status}: {text}")
            return True
        return status < 400

    def _upload(self, path: str, registered: dict[str, Any]) -> None:
        """Send a registered artifact's bytes (resuming what the server holds), unless they are there already; an
        upload the server refuses for good is printed and not tried again."""
        source = self.output_dir / path
        if "id" not in registered or registered.get("sha256") or not source.exists():
            return
        try:
            done = upload_artifact(self._client, int(registered["id"]), source)
        except UploadRefused as exc:
            self.print(f"reporter: upload of artifact {path} refused with {exc}")
            return
        self.print(f"artifact {path} uploaded: {done.size} bytes, sha256 {done.sha256}")

    def _stop_superseded(self, body: bytes) -> None:
        """Print the server's answer once, spool nothing more and end the background thread."""
        self._superseded.set()
        with self._lock:
            if self._fd >= 0:
                os.close(self._fd)
                self._fd = -1
        self.print(f"reporter: stopped reporting: {orjson.loads(body).get('detail', '')}")
        raise _Superseded


_LATEST_WINS = ("reward", "samples_per_s")  # progress fields the server keeps only when not null
_GROUPED = ("metrics", "samples", "progress")


def _next_group(lines: list[tuple[int, dict[str, Any]]], current_attempt: int) -> tuple[int, list[dict[str, Any]]]:
    """How many of the first lines go together, and their requests: an artifact alone; else the run of metric,
    sample and progress lines of one attempt (up to MAX_BATCH_STEPS metric steps) as one metrics batch, the
    samples, and one progress report with what the server would hold after applying each in turn (the last
    values, a null not overwriting an earlier value); no progress report for an attempt before
    `current_attempt` (the server keeps only the current attempt's). Re-sending any of
    these stores nothing twice, so a run cut short by an error is simply sent again."""
    first = lines[0][1]
    if first["kind"] not in _GROUPED:
        return 1, [first]
    attempt = _attempt(first)
    steps: list[dict[str, Any]] = []
    samples: list[dict[str, Any]] = []
    progress: dict[str, Any] | None = None
    count = 0
    for _, request in lines:
        kind = request["kind"]
        if kind not in _GROUPED or _attempt(request) != attempt or len(steps) >= MAX_BATCH_STEPS:
            break
        count += 1
        if kind == "metrics":
            steps += request["json"]["steps"]
        elif kind == "samples":
            samples.append(request)
        else:
            body = request["json"]
            kept = {k: progress[k] for k in _LATEST_WINS if progress and body[k] is None}
            progress = {**body, **kept}
    # One MetricBatch: the steps of the run's spooled MetricBatch lines, each validated when it was reported.
    group = [{"kind": "metrics", "json": {"attempt": attempt, "steps": steps}}] if steps else []
    current = progress is not None and attempt >= current_attempt
    return count, group + samples + ([{"kind": "progress", "json": progress}] if current else [])


def _attempt(request: dict[str, Any]) -> int:
    """The attempt a spooled request reports for; the advisor's probe report carries none (its job has one)."""
    fields = request["data"] if request["kind"] == "samples" else request["json"]
    return int(fields.get("attempt", 0))


def _code(body: bytes) -> str | None:
    """The `code` of a JSON error answer, if any."""
    try:
        answer = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    return answer.get("code") if isinstance(answer, dict) else None
