"""The reporter: the trainer's only door to the platform (docs/contracts.md).

Durable by construction: every event (a step's metrics, a sample, progress, an artifact) is first
appended to a spool file in the output directory, then a background thread ships the spool in
order and records, in a small offset file, how far the server has acknowledged. Training calls
never wait on the network. While the server is away the spool grows; when it returns the thread
catches up. A process that dies (the worker killed, the machine's OOM killer) leaves the spool and
its offset behind, and the next attempt's reporter, started with ``--resume`` in the same output
directory, sends the rest first. On exit the reporter waits (bounded) until the spool is shipped.

Consecutive metric lines go out as one batch; the server stores each point once under its natural
key (job, key, step, attempt), so a batch sent twice — acknowledged but the offset not yet written —
stores nothing twice. Every line a human should see is printed to stdout, the job log.
"""

from __future__ import annotations

import atexit
import base64
import json
import logging
import math
import os
import threading
import time
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger(__name__)

SPOOL_NAME = "reporter-spool.jsonl"
OFFSET_NAME = "reporter-spool.offset"
MAX_BACKOFF_S = 5.0
MAX_BATCH_STEPS = 500
CLOSE_TIMEOUT_S = 120.0  # the longest a finished trainer waits for the server to take its last events
IN_FLIGHT_GRACE_S = 20.0  # a request under way when closing times out: its own timeouts and retries


class Reporter:
    def __init__(
        self,
        output_dir: Path,
        api_url: str | None,
        job_id: str | None,
        attempt: int,
        token: str | None,
        *,
        batch_interval_s: float = 1.0,
        timeout_s: float = 5.0,
        retries: int = 2,
    ) -> None:
        self.enabled = bool(api_url and job_id)
        self.attempt = attempt
        self.spool_path = output_dir / SPOOL_NAME
        self.offset_path = output_dir / OFFSET_NAME
        self.batch_interval_s = batch_interval_s
        self.retries = retries
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._backoff = 0.5
        self._give_up_at = 0.0
        self._thread: threading.Thread | None = None
        if self.enabled:
            output_dir.mkdir(parents=True, exist_ok=True)
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            base = f"{api_url.rstrip('/')}/api/v1/ingest/{job_id}"  # type: ignore[union-attr]
            self._client = httpx.Client(base_url=base, headers=headers, timeout=timeout_s)
            self._spool = open(self.spool_path, "ab")  # noqa: SIM115 - open for the reporter's lifetime
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

    # --- called from the training loop: never waits on the network, never raises -----------
    def print(self, line: str) -> None:
        print(line, flush=True)

    def metrics(self, step: int, values: dict[str, float]) -> None:
        clean = {k: float(v) for k, v in values.items() if v == v and abs(v) != float("inf")}
        point = {"step": step, "wall_time": time.time(), "values": clean}
        self._append({"kind": "metrics", "json": {"attempt": self.attempt, "steps": [point]}})

    def sample(self, step: int, kind: str, prompt: str, seed: int, reward: float | None, png: bytes) -> None:
        data = {"attempt": str(self.attempt), "step": str(step), "kind": kind, "prompt": prompt, "seed": str(seed)}
        if reward is not None:
            data["reward"] = repr(float(reward))
        self._append({"kind": "samples", "data": data, "image": base64.b64encode(png).decode()})

    def progress(self, step: int, total_steps: int, reward: float, samples_per_s: float) -> None:
        body = {
            "attempt": self.attempt,
            "step": step,
            "total_steps": total_steps,
            "reward": reward if math.isfinite(reward) else None,  # JSON has no NaN: httpx would refuse the body
            "samples_per_s": samples_per_s if math.isfinite(samples_per_s) else None,
        }
        self._append({"kind": "progress", "json": body})

    def artifact(self, kind: str, name: str, step: int, path: str) -> None:
        self.print(f"artifact {kind} {name} at {path}")
        body = {"attempt": self.attempt, "kind": kind, "name": name, "step": step, "path": path}
        self._append({"kind": "artifacts", "json": body})

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
        with self._lock:
            self._spool.close()
            if self._shipped_offset() >= self.spool_path.stat().st_size:
                self.spool_path.unlink()
                self.offset_path.unlink(missing_ok=True)

    def _append(self, request: dict[str, Any]) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self._spool.closed:
                return
            self._spool.write(json.dumps(request).encode() + b"\n")
            self._spool.flush()  # in the kernel's hands: survives this process being killed

    # --- background thread ---------------------------------------------------------------
    def _run(self) -> None:
        while True:
            self._wake.wait(self.batch_interval_s)
            self._wake.clear()
            try:
                drained = self._ship()
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

    def _pending(self) -> list[tuple[int, dict[str, Any]]]:
        """(end offset, request) of every complete spool line not yet acknowledged."""
        offset = self._shipped_offset()
        with open(self.spool_path, "rb") as spool:
            spool.seek(offset)
            data = spool.read()
        lines = []
        for raw in data.split(b"\n")[:-1]:  # the last piece is empty or still being written
            offset += len(raw) + 1
            if raw.strip():
                lines.append((offset, json.loads(raw)))
        return lines

    def _ship(self) -> bool:
        """Send what is pending, oldest first, until nothing is: events appended meanwhile go too.
        True when the spool is all acknowledged."""
        while pending := self._pending():
            if not self._send_in_order(pending):
                return False
        self._backoff = 0.5
        return True

    def _send_in_order(self, pending: list[tuple[int, dict[str, Any]]]) -> bool:
        """Send, acknowledging as it goes; consecutive metric points of one attempt go as one batch."""
        index = 0
        while index < len(pending):
            end, request = pending[index]
            index += 1
            if request["kind"] == "metrics":
                body = request["json"]
                steps = list(body["steps"])
                while index < len(pending) and len(steps) < MAX_BATCH_STEPS:
                    nxt = pending[index][1]
                    if nxt["kind"] != "metrics" or nxt["json"]["attempt"] != body["attempt"]:
                        break
                    steps += nxt["json"]["steps"]
                    end = pending[index][0]
                    index += 1
                request = {"kind": "metrics", "json": {"attempt": body["attempt"], "seq": end, "steps": steps}}
            if not self._send_with_retries(request):
                return False
            self._acknowledge(end)
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
                files = {"image": ("sample.png", base64.b64decode(request["image"]), "image/png")}
                response = self._client.post("/samples", data=request["data"], files=files)
            else:
                response = self._client.post(f"/{request['kind']}", json=request["json"])
        except httpx.HTTPError:
            return False
        if 400 <= response.status_code < 500:
            self.print(f"reporter: {request['kind']} refused with {response.status_code}: {response.text[:200]}")
            return True
        return response.status_code < 400
