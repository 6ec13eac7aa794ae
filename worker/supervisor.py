"""Runs one trainer process group and watches it: logs to the database and a file, cancel, exit.

The trainer runs in its own session (process group), so a cancel reaches `torchrun` and every
rank at once: SIGTERM, then SIGKILL after the grace period. It also gets SIGTERM when the
thread that started it dies with the worker, so a killed worker leaves no training behind.

The database may be away for a while (a restarted PostgreSQL): training goes on, log lines
wait in memory and the job's "running" mark is retried until the database answers again.
"""

from __future__ import annotations

import ctypes
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, suppress
from dataclasses import dataclass, field
from typing import IO

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from server.services import job_runs
from server.services.job_runs import RunPlan

log = logging.getLogger(__name__)

POLL_SECONDS = 1.0
MAX_LINE_CHARS = 8000
MAX_BATCH_LINES = 1000
TAIL_LINES = 200  # enough to hold a rank's traceback above torchrun's failure summary
PIPE_DRAIN_SECONDS = 5.0
WORKER_STREAM = "worker"  # the stream name of the supervisor's own lines in the job's logs
MAX_PENDING_LINES = 50_000  # log lines kept while the database is away; older ones are dropped

_PR_SET_PDEATHSIG = 1
_libc = ctypes.CDLL(None, use_errno=True) if os.name == "posix" else None

SessionScope = Callable[[], AbstractContextManager[Session]]


@dataclass(frozen=True)
class Outcome:
    exit_code: int
    stopped_for: str | None
    tail: list[str]
    unsaved_logs: list[tuple[str, str]] = field(default_factory=list)  # the database was away; saved at finish


def terminate_with_parent() -> None:
    """In a child between fork and exec: receive SIGTERM when the thread that started it dies."""
    if _libc is not None and hasattr(_libc, "prctl"):
        _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _read_lines(stream: IO[bytes], name: str, out: queue.Queue[tuple[str, str] | None]) -> None:
    for raw in iter(stream.readline, b""):
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        out.put((name, text[:MAX_LINE_CHARS]))
    out.put(None)


def signal_group(proc: subprocess.Popen[bytes], sig: signal.Signals) -> None:
    with suppress(ProcessLookupError):
        os.killpg(proc.pid, sig)


def _drain(lines: queue.Queue[tuple[str, str] | None], first_wait: float) -> Iterator[tuple[str, str] | None]:
    """Up to MAX_BATCH_LINES queued items, waiting at most `first_wait` for the first."""
    try:
        yield lines.get(timeout=first_wait)
    except queue.Empty:
        return
    for _ in range(MAX_BATCH_LINES - 1):
        try:
            yield lines.get_nowait()
        except queue.Empty:
            return


class _DatabaseSide:
    """The supervisor's writes, each tolerant of a database that is away for a while."""

    def __init__(self, plan: RunPlan, session_scope: SessionScope, host_name: str) -> None:
        self.plan = plan
        self.session_scope = session_scope
        self.host_name = host_name
        self.pending: deque[tuple[str, str]] = deque(maxlen=MAX_PENDING_LINES)
        self.marked_running = False
        self.away_since: float | None = None
        self.retry_at = 0.0

    def _attempt(self, write: Callable[[Session], object]) -> bool:
        """One write; False when the database is away (then no new try before the next poll)."""
        if time.monotonic() < self.retry_at:
            return False
        try:
            with self.session_scope() as session:
                write(session)
        except SQLAlchemyError as exc:
            self.retry_at = time.monotonic() + POLL_SECONDS
            if self.away_since is None:
                self.away_since = time.monotonic()
                log.warning(
                    "job %s node %s: database unavailable (%s); training goes on",
                    self.plan.job_id,
                    self.plan.node_rank,
                    exc.__class__.__name__,
                )
            return False
        if self.away_since is not None:
            log.info(
                "job %s node %s: database back after %.0f s",
                self.plan.job_id,
                self.plan.node_rank,
                time.monotonic() - self.away_since,
            )
            self.away_since = None
        return True

    def mark_running(self) -> None:
        if not self.marked_running:
            self.marked_running = self._attempt(
                lambda s: job_runs.mark_running(
                    s, self.plan.job_id, self.plan.attempt, self.plan.node_rank, self.host_name
                )
            )

    def append_logs(self, batch: list[tuple[str, str]]) -> None:
        self.pending.extend(batch)
        if not self.pending:
            return
        lines = list(self.pending)
        plan = self.plan
        if self._attempt(lambda s: job_runs.append_logs(s, plan.job_id, plan.attempt, plan.node_rank, lines)):
            self.pending.clear()

    def stop_reason(self) -> str | None:
        """None also when the database cannot say: a trainer is never stopped for an outage."""
        found: list[str | None] = []
        self._attempt(lambda s: found.append(job_runs.stop_reason(s, self.plan.job_id, self.plan.attempt)))
        return found[0] if found else None


def supervise(
    plan: RunPlan,
    argv: list[str],
    env: dict[str, str],
    session_scope: SessionScope,
    *,
    host_name: str,
    cancel_grace_seconds: float,
    shutdown: threading.Event,
) -> Outcome:
    """Start the trainer, stream its output, stop it when asked; returns how it ended.

    The supervisor's own lines (the command, a stop and why, the exit code) go to the job's logs too, under
    stream "worker": a node whose ranks print nothing still shows that it ran and how it ended."""
    lines: queue.Queue[tuple[str, str] | None] = queue.Queue()
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    database = _DatabaseSide(plan, session_scope, host_name)
    with open(plan.log_path, "a", encoding="utf-8") as log_file:

        def note(text: str) -> None:
            log_file.write(f"sfumato: {text}\n")
            database.pending.append((WORKER_STREAM, text))

        note(f"$ {' '.join(argv)}")
        proc = subprocess.Popen(
            argv,
            env=env,
            cwd=plan.run_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            preexec_fn=terminate_with_parent,  # only an async-signal-safe prctl call
        )
        assert proc.stdout is not None and proc.stderr is not None
        readers = [
            threading.Thread(target=_read_lines, args=(stream, name, lines), daemon=True)
            for stream, name in ((proc.stdout, "stdout"), (proc.stderr, "stderr"))
        ]
        for reader in readers:
            reader.start()
        log.info("job %s attempt %s node %s: pid %s", plan.job_id, plan.attempt, plan.node_rank, proc.pid)
        database.mark_running()

        stopped_for: str | None = None
        kill_at: float | None = None
        open_streams = len(readers)
        exited_at: float | None = None
        next_poll = time.monotonic() + POLL_SECONDS
        while open_streams or proc.poll() is None:
            batch: list[tuple[str, str]] = []
            for item in _drain(lines, first_wait=0.2):
                if item is None:
                    open_streams -= 1
                else:
                    batch.append(item)
            if batch:
                log_file.writelines(f"[{stream}] {text}\n" for stream, text in batch)
                log_file.flush()
                tail.extend(text for _, text in batch)
            if batch or database.pending:
                database.append_logs(batch)

            now = time.monotonic()
            if proc.poll() is not None:
                # The trainer is gone; a straggler holding the pipes open must not hold the task.
                exited_at = exited_at or now
                if open_streams and now - exited_at > PIPE_DRAIN_SECONDS:
                    signal_group(proc, signal.SIGKILL)
                    break
                continue
            if stopped_for is None and now >= next_poll:
                next_poll = now + POLL_SECONDS
                database.mark_running()
                stopped_for = database.stop_reason()
                if stopped_for is None and shutdown.is_set():
                    stopped_for = job_runs.STOP_SHUTDOWN
                if stopped_for is not None:
                    log.info("job %s node %s: stopping (%s)", plan.job_id, plan.node_rank, stopped_for)
                    note(f"stopping the trainer ({stopped_for})")
                    signal_group(proc, signal.SIGTERM)
                    kill_at = now + cancel_grace_seconds
            if kill_at is not None and now >= kill_at:
                note(f"no exit {cancel_grace_seconds:g} s after SIGTERM; SIGKILL")
                signal_group(proc, signal.SIGKILL)
                kill_at = None

        exit_code = proc.wait()
        signal_group(proc, signal.SIGKILL)  # whatever the ranks left behind
        note(f"exit code {exit_code}")
    return Outcome(exit_code, stopped_for, list(tail), list(database.pending))
