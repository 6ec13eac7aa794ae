"""The database side of running one node of one job attempt on a worker.

The worker's task calls these in order: `start_run` (claim the attempt, write the spec, mint the
job token), `mark_running`, then `append_logs` and `stop_reason` while the trainer runs, and
`finish_run` with the exit. Every function re-reads the job under a row lock and does nothing
for an attempt that is no longer current, so a task the broker delivers twice, or late, is
harmless: the database, not the broker, says what should run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import TERMINAL_STATES, Allocation, Device, Host, Job, LogLine, utcnow
from server.services.job_status import set_status
from server.services.scheduler import release_allocations, retry_or_fail
from server.services.tokens import JOB_TOKEN_PREFIX, hash_token, new_token

# Base of the c10d rendezvous port on a multi-node job's first host; the job id picks one above it.
RENDEZVOUS_PORT_BASE = 29500
RENDEZVOUS_PORT_SPREAD = 500

# Torchrun reports the first rank to fail under this heading; "exitcode : -9" there means SIGKILL.
ROOT_CAUSE_HEADING = "Root Cause (first observed failure):"
SIGKILL_EXIT_CODES = (-9, 128 + 9)  # Popen's -signal, or a shell's 128 + signal
ERROR_TAIL_LINES = 40

STOP_CANCEL = "cancel"
STOP_SUPERSEDED = "superseded"
STOP_SHUTDOWN = "shutdown"


@dataclass(frozen=True)
class RunPlan:
    """Everything the worker needs to launch one node of one attempt."""

    job_id: int
    attempt: int
    node_rank: int
    nnodes: int
    device_type: str
    device_indices: list[int]
    run_dir: Path
    spec_path: Path
    log_path: Path
    token: str | None
    rendezvous_endpoint: str | None
    host_devices: int

    @property
    def resume(self) -> bool:
        return self.attempt > 1


def job_run_dir(artifact_root: Path, job_id: int) -> Path:
    """One folder per job, shared by its attempts, so a retry finds the checkpoints of the last one."""
    return artifact_root / "jobs" / str(job_id)


def _lock_job(session: Session, job_id: int) -> Job | None:
    return session.get(Job, job_id, with_for_update=True, populate_existing=True)


def _is_current(job: Job | None, attempt: int) -> bool:
    return job is not None and job.attempt == attempt and job.status in ("scheduled", "running")


def start_run(
    session: Session, job_id: int, attempt: int, node_rank: int, host_name: str, artifact_root: Path
) -> RunPlan | None:
    """Claim a node of an attempt: None when it is stale, not on this host, or was cancelled meanwhile."""
    job = _lock_job(session, job_id)
    if job is None or not _is_current(job, attempt):
        return None
    allocations = session.scalars(
        select(Allocation)
        .where(
            Allocation.job_id == job_id,
            Allocation.attempt == attempt,
            Allocation.node_rank == node_rank,
            Allocation.released_at.is_(None),
        )
        .order_by(Allocation.id)
    ).all()
    if not allocations or any(a.host.name != host_name for a in allocations):
        return None
    if job.cancel_requested:
        release_allocations(session, job.id, attempt)
        set_status(session, job, "cancelled", "cancelled before it started")
        return None

    run_dir = job_run_dir(artifact_root, job.id)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    spec_path = run_dir / "spec.json"
    spec_path.write_text(json.dumps(job.spec, indent=2, sort_keys=True))

    token = None
    if node_rank == 0:  # only global rank 0 reports, and it runs on node 0
        token = new_token(JOB_TOKEN_PREFIX)
        job.token_hash = hash_token(token)

    endpoint = None
    if job.nodes > 1:
        first = session.scalars(
            select(Host)
            .join(Allocation, Allocation.host_id == Host.id)
            .where(Allocation.job_id == job.id, Allocation.attempt == attempt, Allocation.node_rank == 0)
        ).first()
        address = (first.address or first.name) if first else "127.0.0.1"
        endpoint = f"{address}:{RENDEZVOUS_PORT_BASE + job.id % RENDEZVOUS_PORT_SPREAD}"

    return RunPlan(
        job_id=job.id,
        attempt=attempt,
        node_rank=node_rank,
        nnodes=job.nodes,
        device_type=job.device_type,
        device_indices=sorted(a.device.index for a in allocations),
        run_dir=run_dir,
        spec_path=spec_path,
        log_path=run_dir / "logs" / f"attempt-{attempt}.node-{node_rank}.log",
        token=token,
        rendezvous_endpoint=endpoint,
        host_devices=session.scalar(
            select(func.count()).select_from(Device).where(Device.host_id == allocations[0].host_id, Device.enabled)
        )
        or 1,
    )


def mark_running(session: Session, job_id: int, attempt: int, host_name: str) -> bool:
    """The trainer process started; False when the attempt is no longer current."""
    job = _lock_job(session, job_id)
    if job is None or not _is_current(job, attempt):
        return False
    if job.status == "scheduled":
        set_status(session, job, "running", f"started on {host_name}")
    return True


def append_logs(session: Session, job_id: int, attempt: int, node_rank: int, lines: list[tuple[str, str]]) -> None:
    """Store (stream, text) lines of one node's output."""
    now = utcnow()
    session.add_all(
        LogLine(job_id=job_id, attempt=attempt, node_rank=node_rank, stream=stream, text=text, created_at=now)
        for stream, text in lines
    )


def stop_reason(session: Session, job_id: int, attempt: int) -> str | None:
    """Why a running node should stop now: cancel requested, or its attempt is over; None to go on."""
    job = session.get(Job, job_id, populate_existing=True)
    if job is None or job.attempt != attempt or job.status not in ("scheduled", "running"):
        return STOP_SUPERSEDED
    if job.cancel_requested:
        return STOP_CANCEL
    return None


def finish_run(
    session: Session,
    job_id: int,
    attempt: int,
    node_rank: int,
    host_name: str,
    exit_code: int,
    stopped_for: str | None,
    log_tail: list[str],
) -> str | None:
    """Record how a node ended and free its devices; returns the job's new status, if it changed."""
    job = _lock_job(session, job_id)
    if job is None:
        return None
    release_allocations_of_node(session, job_id, attempt, node_rank)
    if job.attempt != attempt or job.status in TERMINAL_STATES or job.status == "queued":
        return None
    if stopped_for == STOP_CANCEL:
        release_allocations(session, job.id, attempt)
        set_status(session, job, "cancelled", f"cancelled; trainer stopped with exit code {exit_code}")
    elif stopped_for == STOP_SHUTDOWN:
        retry_or_fail(session, job, f"worker on host {host_name} shut down")
    elif exit_code == 0:
        still_running = session.scalar(
            select(func.count())
            .select_from(Allocation)
            .where(Allocation.job_id == job.id, Allocation.attempt == attempt, Allocation.released_at.is_(None))
        )
        if still_running:
            return None  # other nodes of this attempt are still going; the last one decides
        set_status(session, job, "succeeded", f"exit code 0 on {host_name}")
    elif killed_by_sigkill(exit_code, log_tail):
        retry_or_fail(session, job, f"trainer on {host_name} (node {node_rank}) was killed by SIGKILL (out of memory?)")
    else:
        release_allocations(session, job.id, attempt)
        detail = trainer_traceback(log_tail) or "\n".join(log_tail[-ERROR_TAIL_LINES:])
        job.error = f"trainer exited with code {exit_code} on {host_name} (node {node_rank})\n{detail}".rstrip()
        set_status(session, job, "failed", f"exit code {exit_code} on {host_name}")
    return job.status


def killed_by_sigkill(exit_code: int, log_tail: list[str]) -> bool:
    """The trainer, or the first of its ranks to fail, died of SIGKILL: the kernel's OOM killer or the host,
    not the trainer's own error, so the job is retried rather than failed."""
    if exit_code in SIGKILL_EXIT_CODES:
        return True
    headings = [i for i, line in enumerate(log_tail) if line.strip() == ROOT_CAUSE_HEADING]
    if not headings:
        return False
    for line in log_tail[headings[-1] :]:
        name, _, value = line.strip().partition(":")
        if name.strip() == "exitcode":
            return value.split()[:1] in (["-9"], ["137"])
    return False


def trainer_traceback(log_tail: list[str]) -> str | None:
    """The first Python traceback of a rank in the log tail (torchrun's own ChildFailedError skipped)."""
    block: list[str] = []
    for line in log_tail:
        if line.startswith("Traceback (most recent call last):"):
            block = [line]
        elif block and line[:1].isspace():
            block.append(line)
        elif block:
            block.append(line)
            if "ChildFailedError" not in line:
                return "\n".join(block)
            block = []
    return None


def release_allocations_of_node(session: Session, job_id: int, attempt: int, node_rank: int) -> None:
    now = utcnow()
    for allocation in session.scalars(
        select(Allocation).where(
            Allocation.job_id == job_id,
            Allocation.attempt == attempt,
            Allocation.node_rank == node_rank,
            Allocation.released_at.is_(None),
        )
    ):
        allocation.released_at = now
