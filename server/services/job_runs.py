"""The database side of running one node of one job attempt on a worker.

The worker's task calls these in order: `start_run` (claim the attempt, write the spec, mint the
job and reward tokens on node 0 or make the node token of another node), `mark_running`, then `append_logs` and
`stop_reason` while the trainer runs, and `finish_run` with the exit. Every function re-reads the job
under a row lock and does nothing for an attempt that is no longer current, so a task the broker
delivers twice, or late, is harmless: the database, not the broker, says what should run.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.models import TERMINAL_STATES, Allocation, Device, Host, Job, JobStatus, LogLine, utcnow
from server.models.host import POOLS
from server.services.allocations import release_idle_allocations
from server.services.job_attempts import AttemptEnd, mark_seen, record_token
from server.services.job_status import set_status
from server.services.node_tokens import node_token
from server.services.retry_policy import retry_or_fail
from server.services.service_rewards import trainer_spec
from server.services.tokens import JOB_TOKEN_PREFIX, REWARD_TOKEN_PREFIX, hash_token, new_token
from server.states import PLACED_STATES, TASK_KINDS, JobKind
from trainer.spec.exit_codes import PLATFORM_OUTAGE_EXIT_CODE, PLATFORM_OUTAGE_PREFIX

# Base of the rendezvous port on a multi-node job's first host; the job id and the attempt pick one above it,
# so a retry does not meet the port of its previous attempt, whose node 0 may still be stopping there.
RENDEZVOUS_PORT_BASE = 29500
RENDEZVOUS_PORT_SPREAD = 500

# Torchrun reports the first rank to fail under this heading; "exitcode : -9" there means SIGKILL.
ROOT_CAUSE_HEADING = "Root Cause (first observed failure):"
SIGKILL_EXIT_CODES = (-9, 128 + 9)  # Popen's -signal, or a shell's 128 + signal
ERROR_TAIL_LINES = 40

# The trainer's subcommand for each kind of job.
TRAINER_COMMANDS = {
    JobKind.TRAIN: "run",
    JobKind.PROBE: "probe",
    **{kind: "task" for kind in TASK_KINDS},
}

STOP_CANCEL = "cancel"
STOP_SUPERSEDED = "superseded"
STOP_SHUTDOWN = "shutdown"
STOP_PEER_FAILED = "peer failed"  # another node of the attempt exited with an error


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
    token: str | None  # the job token: node 0 only, whose rank 0 reports (ingestion only, never sent to a reward)
    rendezvous_endpoint: str | None
    host_devices: int
    command: str = "run"  # the trainer's subcommand: "probe" for the advisor's probe job, "task" for a task job
    task_path: Path | None = None  # a task job's task file (trainer.spec.task)
    # What every rank shows reward servers: node 0 its reward token, the other nodes their node token
    # (services.node_tokens); only the caller check of the job's team's services accepts either.
    reward_token: str | None = None

    @property
    def resume(self) -> bool:
        return self.attempt > 1 and self.command == "run"


def job_run_dir(artifact_root: Path, job_id: int) -> Path:
    """One folder per job, shared by its attempts, so a retry finds the checkpoints of the last one."""
    return artifact_root / "jobs" / str(job_id)


def _lock_job(session: Session, job_id: int) -> Job | None:
    return session.get(Job, job_id, with_for_update=True, populate_existing=True)


def _is_current(job: Job | None, attempt: int) -> bool:
    return job is not None and job.attempt == attempt and job.status in PLACED_STATES


def start_run(
    session: Session,
    job_id: int,
    attempt: int,
    node_rank: int,
    host_name: str,
    artifact_root: Path,
    *,
    node_token_key: bytes | None,
) -> RunPlan | None:
    """Claim a node of an attempt: None when it is stale, not on this host, or was cancelled meanwhile.
    `node_token_key` (services.node_tokens.node_token_key) signs the token of a node other than 0 (node 0,
    whose job and reward tokens are random and stored hashed, needs none).

    The node's devices are listed rollout pool first, so with both DigenRL pools on one host the local ranks
    [0, rollout devices) are the rollout pool; across hosts the rollout pool is node 0."""
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
        release_idle_allocations(session, job.id)
        set_status(session, job, JobStatus.CANCELLED, "cancelled before it started")
        return None

    spec = trainer_spec(session, job)
    if spec is None:  # a reward service it names went away between placement and now
        release_idle_allocations(session, job.id)
        job.wait_reason = "a reward service it names is not running"
        set_status(session, job, JobStatus.QUEUED, f"{job.wait_reason}; back to the queue")
        return None
    run_dir = job_run_dir(artifact_root, job.id)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    spec_path = run_dir / "spec.json"
    spec_path.write_text(json.dumps(spec, indent=2, sort_keys=True))
    task_path = None
    if job.task is not None:
        task_path = run_dir / "task.json"
        task_path.write_text(json.dumps(job.task, indent=2, sort_keys=True))

    token = None
    if node_rank == 0:  # only global rank 0 reports, and it runs on node 0
        token = new_token(JOB_TOKEN_PREFIX)
        job.token_hash = hash_token(token)
        record_token(session, job, job.token_hash)
        scoring = new_token(REWARD_TOKEN_PREFIX)
        job.reward_token_hash = hash_token(scoring)
    else:  # its ranks score their own samples, so a reward service must know them too
        if node_token_key is None:
            raise ValueError(f"node {node_rank} of job {job.id} needs the node token key to sign its token")
        scoring = node_token(node_token_key, job.id, attempt, node_rank)

    nnodes = len(
        set(
            session.scalars(
                select(Allocation.node_rank).where(Allocation.job_id == job.id, Allocation.attempt == attempt)
            )
        )
    )
    endpoint = None
    if nnodes > 1:
        first = session.scalars(
            select(Host)
            .join(Allocation, Allocation.host_id == Host.id)
            .where(Allocation.job_id == job.id, Allocation.attempt == attempt, Allocation.node_rank == 0)
        ).first()
        address = (first.address or first.name) if first else "127.0.0.1"
        endpoint = f"{address}:{rendezvous_port(job.id, attempt)}"

    return RunPlan(
        job_id=job.id,
        attempt=attempt,
        node_rank=node_rank,
        nnodes=nnodes,
        device_type=job.device_type,
        device_indices=[a.device.index for a in sorted(allocations, key=_rollout_first)],
        run_dir=run_dir,
        spec_path=spec_path,
        log_path=run_dir / "logs" / f"attempt-{attempt}.node-{node_rank}.log",
        token=token,
        rendezvous_endpoint=endpoint,
        host_devices=session.scalar(
            select(func.count()).select_from(Device).where(Device.host_id == allocations[0].host_id, Device.enabled)
        )
        or 1,
        command=TRAINER_COMMANDS[JobKind(job.kind)],
        task_path=task_path,
        reward_token=scoring,
    )


def rendezvous_port(job_id: int, attempt: int) -> int:
    return RENDEZVOUS_PORT_BASE + (job_id + 97 * attempt) % RENDEZVOUS_PORT_SPREAD


def _rollout_first(allocation: Allocation) -> tuple[int, int]:
    return (POOLS.index(allocation.pool) if allocation.pool in POOLS else 0, allocation.device.index)


def _node_allocations(session: Session, job_id: int, attempt: int, node_rank: int) -> list[Allocation]:
    return list(
        session.scalars(
            select(Allocation).where(
                Allocation.job_id == job_id,
                Allocation.attempt == attempt,
                Allocation.node_rank == node_rank,
                Allocation.released_at.is_(None),
            )
        )
    )


def mark_running(session: Session, job_id: int, attempt: int, node_rank: int, host_name: str) -> bool:
    """A node's trainer process started; False when the attempt is no longer current."""
    job = _lock_job(session, job_id)
    if job is None or not _is_current(job, attempt):
        return False
    now = utcnow()
    for allocation in _node_allocations(session, job_id, attempt, node_rank):
        allocation.started_at = allocation.started_at or now
    if job.status == JobStatus.SCHEDULED:
        set_status(session, job, JobStatus.RUNNING, f"started on {host_name}")
    else:
        mark_seen(session, job_id, attempt)  # another node started: the attempt runs on
    return True


def append_logs(session: Session, job_id: int, attempt: int, node_rank: int, lines: list[tuple[str, str]]) -> None:
    """Store (stream, text) lines of one node's output."""
    now = utcnow()
    session.add_all(
        LogLine(job_id=job_id, attempt=attempt, node_rank=node_rank, stream=stream, text=text, created_at=now)
        for stream, text in lines
    )


def stop_reason(session: Session, job_id: int, attempt: int) -> str | None:
    """Why a running node should stop now: cancel requested, its attempt is over (a node lost, the job
    requeued), or another node of the attempt failed; None to go on. The worker asks every second while its
    trainer runs, so asking also marks the attempt seen running now (services.job_attempts)."""
    job = session.get(Job, job_id, populate_existing=True)
    if job is None or job.attempt != attempt or job.status not in PLACED_STATES:
        return STOP_SUPERSEDED
    mark_seen(session, job_id, attempt)
    if job.cancel_requested:
        return STOP_CANCEL
    failed_peer = session.scalar(
        select(Allocation.id)
        .where(Allocation.job_id == job_id, Allocation.attempt == attempt, Allocation.exit_code != 0)
        .limit(1)
    )
    return STOP_PEER_FAILED if failed_peer is not None else None


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
    """Record how a node ended and free its devices; returns the job's new status, if it changed.

    A multi-node attempt is decided as a whole: a node that fails with an error of its own makes the others
    stop (`STOP_PEER_FAILED`), and the job fails only when the last node has ended. Until then a lost node
    (its host lost, its worker restarted) still turns the attempt into a retry: a node that fails because its
    peer vanished from the process group is not taken for the trainer's own error.
    """
    job = _lock_job(session, job_id)
    if job is None:
        return None
    now = utcnow()
    for allocation in _node_allocations(session, job_id, attempt, node_rank):
        allocation.exit_code = exit_code
        allocation.released_at = now
    if job.attempt != attempt or job.status in TERMINAL_STATES or job.status == JobStatus.QUEUED:
        return None
    mark_seen(session, job_id, attempt)  # its trainer ran until now
    where = f"{host_name} (node {node_rank})"
    if stopped_for == STOP_CANCEL:
        release_idle_allocations(session, job.id)
        set_status(session, job, JobStatus.CANCELLED, f"cancelled; trainer stopped with exit code {exit_code}")
    elif stopped_for == STOP_SHUTDOWN:
        retry_or_fail(session, job, f"worker on host {host_name} shut down")
    elif killed_by_sigkill(exit_code, log_tail):
        retry_or_fail(session, job, f"trainer on {where} was killed by SIGKILL (out of memory?)", AttemptEnd.FAILURE)
    elif met_platform_outage(exit_code, log_tail):
        retry_or_fail(session, job, f"trainer on {where} met a {outage_line(log_tail)}")
    else:
        if exit_code != 0 and stopped_for != STOP_PEER_FAILED:
            detail = trainer_traceback(log_tail) or "\n".join(log_tail[-ERROR_TAIL_LINES:])
            error = f"trainer exited with code {exit_code} on {where}\n{detail}".rstrip()
            job.error = f"{job.error}\n\n{error}" if job.error else error
        if _nodes_still_running(session, job.id, attempt):
            return None  # the last node of the attempt decides
        if job.error is None:
            set_status(session, job, JobStatus.SUCCEEDED, f"exit code 0 on {host_name}")
        else:
            release_idle_allocations(session, job.id)
            set_status(
                session, job, JobStatus.FAILED, f"a node exited with an error; last: exit code {exit_code} on {where}"
            )
    return job.status


def _nodes_still_running(session: Session, job_id: int, attempt: int) -> int:
    return (
        session.scalar(
            select(func.count())
            .select_from(Allocation)
            .where(Allocation.job_id == job_id, Allocation.attempt == attempt, Allocation.released_at.is_(None))
        )
        or 0
    )


def failed_rank_exit_code(log_tail: list[str]) -> int | None:
    """The exit code of the first rank to fail, as torchrun reports it under its root-cause heading."""
    headings = [i for i, line in enumerate(log_tail) if line.strip() == ROOT_CAUSE_HEADING]
    if not headings:
        return None
    for line in log_tail[headings[-1] :]:
        name, _, value = line.strip().partition(":")
        if name.strip() == "exitcode":
            code = value.split()[:1]
            return int(code[0]) if code and code[0].lstrip("-").isdigit() else None
    return None


def killed_by_sigkill(exit_code: int, log_tail: list[str]) -> bool:
    """The trainer, or the first of its ranks to fail, died of SIGKILL: the kernel's OOM killer or the host,
    not the trainer's own error, so the job is retried rather than failed."""
    return exit_code in SIGKILL_EXIT_CODES or failed_rank_exit_code(log_tail) in SIGKILL_EXIT_CODES


def met_platform_outage(exit_code: int, log_tail: list[str]) -> bool:
    """The trainer, or the first of its ranks to fail, exited because a platform part (a reward service) stayed
    unreachable for its whole outage window: an infrastructure failure, retried rather than failed."""
    return PLATFORM_OUTAGE_EXIT_CODE in (exit_code, failed_rank_exit_code(log_tail))


def outage_line(log_tail: list[str]) -> str:
    """The trainer's own account of the outage (it names the reward and its URL), without a rank's prefix."""
    found = [line[line.index(PLATFORM_OUTAGE_PREFIX) :] for line in log_tail if PLATFORM_OUTAGE_PREFIX in line]
    return found[0].strip() if found else f"platform outage (exit code {PLATFORM_OUTAGE_EXIT_CODE})"


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
