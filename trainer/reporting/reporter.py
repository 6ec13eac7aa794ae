"""The reporter: the trainer's only door to the platform (docs/contracts.md).

Training calls never block on the network: events go on a bounded queue that a background
thread sends over HTTP with the job token. Metric points are batched. A failed send is retried
briefly, then written to a spool file in the output directory; while the server is away every
event goes there, and the spool is flushed, oldest first, once a send succeeds again. Batches
carry (attempt, seq), so a batch that was sent twice stores nothing twice. Every line a human
should see is printed to stdout, which the worker keeps as the job log.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import queue
import threading
import time
from pathlib import Path
from typing import Any

import httpx

log = logging.getLogger(__name__)

SPOOL_NAME = "reporter-spool.jsonl"
MAX_BACKOFF_S = 30.0


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
        queue_size: int = 10_000,
        timeout_s: float = 5.0,
        retries: int = 2,
    ) -> None:
        self.enabled = bool(api_url and job_id)
        self.attempt = attempt
        self.spool_path = output_dir / SPOOL_NAME
        self.batch_interval_s = batch_interval_s
        self.retries = retries
        self._seq = 0
        self._queue: queue.Queue[dict[str, Any] | None] = queue.Queue(maxsize=queue_size)
        self._spool_lock = threading.Lock()
        self._down_until = 0.0
        self._backoff = 0.5
        self._thread: threading.Thread | None = None
        if self.enabled:
            headers = {"Authorization": f"Bearer {token}"} if token else {}
            base = f"{api_url.rstrip('/')}/api/v1/ingest/{job_id}"  # type: ignore[union-attr]
            self._client = httpx.Client(base_url=base, headers=headers, timeout=timeout_s)
            self._thread = threading.Thread(target=self._run, name="sfumato-reporter", daemon=True)
            self._thread.start()

    @classmethod
    def from_environment(cls, output_dir: Path) -> Reporter:
        return cls(
            output_dir,
            os.environ.get("SFUMATO_API_URL"),
            os.environ.get("SFUMATO_JOB_ID"),
            int(os.environ.get("SFUMATO_JOB_ATTEMPT", "1")),
            os.environ.get("SFUMATO_JOB_TOKEN"),
        )

    # --- called from the training loop: never blocks, never raises ------------------------
    def print(self, line: str) -> None:
        print(line, flush=True)

    def metrics(self, step: int, values: dict[str, float]) -> None:
        clean = {k: float(v) for k, v in values.items() if v == v and abs(v) != float("inf")}
        self._put({"kind": "metric", "step": step, "wall_time": time.time(), "values": clean})

    def sample(self, step: int, kind: str, prompt: str, seed: int, reward: float | None, png: bytes) -> None:
        data = {"attempt": str(self.attempt), "step": str(step), "kind": kind, "prompt": prompt, "seed": str(seed)}
        if reward is not None:
            data["reward"] = repr(float(reward))
        self._put({"kind": "samples", "data": data, "image": base64.b64encode(png).decode()})

    def progress(self, step: int, total_steps: int, reward: float, samples_per_s: float) -> None:
        body = {"attempt": self.attempt, "step": step, "total_steps": total_steps, "reward": reward,
                "samples_per_s": samples_per_s}
        self._put({"kind": "progress", "json": body})

    def artifact(self, kind: str, name: str, step: int, path: str) -> None:
        self.print(f"artifact {kind} {name} at {path}")
        body = {"attempt": self.attempt, "kind": kind, "name": name, "step": step, "path": path}
        self._put({"kind": "artifacts", "json": body})

    def close(self, timeout_s: float = 15.0) -> None:
        """Send what is queued (bounded wait); anything unsent stays in the spool."""
        if self._thread is None:
            return
        with contextlib.suppress(queue.Full):
            self._queue.put(None, timeout=1.0)
        self._thread.join(timeout_s)
        self._client.close()

    def _put(self, event: dict[str, Any]) -> None:
        if not self.enabled:
            return
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self._spool([self._as_request(event)])

    # --- background thread ---------------------------------------------------------------
    def _run(self) -> None:
        closing = False
        while not closing:
            events: list[dict[str, Any]] = []
            deadline = time.monotonic() + self.batch_interval_s
            while time.monotonic() < deadline:
                try:
                    event = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
                except queue.Empty:
                    break
                if event is None:
                    closing = True
                    break
                events.append(event)
            try:
                self._deliver([self._as_request(e) for e in self._batch_metrics(events)], final=closing)
            except Exception:  # the reporter must never take training down
                log.exception("reporter failed; events kept in %s", self.spool_path)

    def _batch_metrics(self, events: list[dict[str, Any]]) -> list[dict[str, Any]]:
        points = [e for e in events if e["kind"] == "metric"]
        others = [e for e in events if e["kind"] != "metric"]
        if not points:
            return others
        self._seq += 1
        steps = [{"step": p["step"], "wall_time": p["wall_time"], "values": p["values"]} for p in points]
        batch = {"kind": "metrics", "json": {"attempt": self.attempt, "seq": self._seq, "steps": steps}}
        return [batch, *others]

    @staticmethod
    def _as_request(event: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in event.items() if k in ("kind", "json", "data", "image")}

    def _deliver(self, requests: list[dict[str, Any]], final: bool) -> None:
        if time.monotonic() < self._down_until and not final:
            self._spool(requests)
            return
        if not self._flush_spool():
            self._spool(requests)
            return
        for index, request in enumerate(requests):
            if not self._send_with_retries(request):
                self._spool(requests[index:])
                return

    def _send_with_retries(self, request: dict[str, Any]) -> bool:
        for attempt in range(self.retries + 1):
            if self._send(request):
                self._backoff = 0.5
                self._down_until = 0.0
                return True
            if attempt < self.retries:
                time.sleep(0.2 * (attempt + 1))
        self._down_until = time.monotonic() + self._backoff
        self._backoff = min(self._backoff * 2, MAX_BACKOFF_S)
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

    def _spool(self, requests: list[dict[str, Any]]) -> None:
        with self._spool_lock, open(self.spool_path, "a") as spool:
            for request in requests:
                spool.write(json.dumps(request) + "\n")

    def _flush_spool(self) -> bool:
        """Send spooled requests oldest first; keep the unsent rest. True when the spool is empty."""
        with self._spool_lock:
            if not self.spool_path.exists():
                return True
            lines = [line for line in self.spool_path.read_text().splitlines() if line.strip()]
            sent = 0
            for line in lines:
                if not self._send_with_retries(json.loads(line)):
                    break
                sent += 1
            if sent == len(lines):
                self.spool_path.unlink()
                return True
            self.spool_path.write_text("".join(line + "\n" for line in lines[sent:]))
            return False
