"""Matching queued jobs to free devices, atomically, and keeping allocations honest.

One pass (`schedule_once`) runs in a single database transaction that is the only writer of
allocations while it runs:

- PostgreSQL: the candidate device rows are locked with `FOR UPDATE SKIP LOCKED` (a concurrent
  scheduler sees a disjoint set), the live allocations are read again *after* the locks are held
  (a new statement sees every allocation committed by whoever held a lock before), and queued
  jobs are locked the same way so no two schedulers place one job.
- SQLite: the transaction starts with `BEGIN IMMEDIATE`, which takes the database's write lock.

Tasks are sent to the hosts' Celery queues only after the transaction commits, so a worker
never receives a job the database does not yet show as scheduled.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from server.models import ACTIVE_STATES, TERMINAL_STATES, Allocation, Device, Host, Job, JobEvent, utcnow
from server.services.hosts import mark_lost_hosts
from server.services.job_status import set_status

log = logging.getLogger(__name__)

RUN_JOB_TASK = "worker.run_job"


@dataclass(frozen=True)
class NodeTask:
    """One node of one job attempt, to be run by the worker on `queue`."""

    job_id: int
    attempt: int
    node_rank: int
    host: str
    queue: str

    def task_kwargs(self) -> dict[str, int]:
        return {"job_id": self.job_id, "attempt": self.attempt, "node_rank": self.node_rank}


@dataclass
class PassReport:
    placed: list[NodeTask] = field(default_factory=list)
    waiting: dict[int, str] = field(default_factory=dict)
    lost_hosts: list[str] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


Dispatch = Callable[[NodeTask], None]


@contextmanager
def writer_transaction(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session whose transaction holds the write lock on SQLite from its first statement."""
    session = factory()
    try:
        if session.get_bind().dialect.name == "sqlite":
            session.execute(text("BEGIN IMMEDIATE"))
        yield session
        session.commit()
    except Exception:
        session.rollback()
        raise
    finally:
        session.close()


def release_allocations(session: Session, job_id: int, attempt: int | None = None) -> int:
    """Mark a job's live allocations released (of one attempt when given); returns how many."""
    query = select(Allocation).where(Allocation.job_id == job_id, Allocation.released_at.is_(None))
    if attempt is not None:
        query = query.where(Allocation.attempt == attempt)
    now = utcnow()
    allocations = list(session.scalars(query))
    for allocation in allocations:
        allocation.released_at = now
    return len(allocations)


def started_attempts(session: Session, job_id: int) -> int:
    """How many times the trainer of a job started; an attempt that never ran does not count."""
    return (
        session.scalar(
            select(func.count()).select_from(JobEvent).where(JobEvent.job_id == job_id, JobEvent.status == "running")
        )
        or 0
    )


def retry_or_fail(session: Session, job: Job, reason: str) -> bool:
    """An infrastructure failure: back to the queue while attempts remain, else failed. True if requeued."""
    release_allocations(session, job.id)
    if job.cancel_requested:
        set_status(session, job, "cancelled", reason)
        return False
    used = started_attempts(session, job.id)
    if used < job.max_attempts:
        job.token_hash = None
        set_status(session, job, "queued", f"{reason}; retrying ({used} of {job.max_attempts} attempts used)")
        return True
    job.error = f"{reason}; no attempts left ({used} of {job.max_attempts} used)"
    set_status(session, job, "failed", job.error)
    return False


def _reconcile(session: Session, lost_after_seconds: float, report: PassReport) -> None:
    for host in mark_lost_hosts(session, lost_after_seconds):
        report.lost_hosts.append(host.name)
        log.warning("host %s lost: no heartbeat for %.0f s", host.name, lost_after_seconds)

    orphaned = session.scalars(
        select(Job)
        .where(
            Job.status.in_(("scheduled", "running")),
            Job.id.in_(
                select(Allocation.job_id)
                .join(Host, Host.id == Allocation.host_id)
                .where(Allocation.released_at.is_(None), Host.status == "lost")
            ),
        )
        .order_by(Job.id)
        .with_for_update()
    )
    for job in orphaned:
        hosts = session.scalars(
            select(Host.name)
            .join(Allocation, Allocation.host_id == Host.id)
            .where(Allocation.job_id == job.id, Allocation.released_at.is_(None), Host.status == "lost")
            .distinct()
        ).all()
        if retry_or_fail(session, job, f"host {', '.join(hosts)} lost"):
            report.requeued.append(job.id)
        else:
            report.failed.append(job.id)

    finished = session.scalars(
        select(Allocation)
        .join(Job, Job.id == Allocation.job_id)
        .where(Allocation.released_at.is_(None), Job.status.in_(TERMINAL_STATES))
    )
    now = utcnow()
    for allocation in finished:
        allocation.released_at = now

    for job in session.scalars(
        select(Job).where(Job.status == "queued", Job.cancel_requested.is_(True)).with_for_update(skip_locked=True)
    ):
        set_status(session, job, "cancelled", "cancelled while queued")


@dataclass
class _FreeDevice:
    id: int
    index: int
    model: str


def _free_devices(session: Session) -> dict[tuple[int, str], list[_FreeDevice]]:
    """Free, enabled devices of online hosts, locked for this transaction, by (host id, device type)."""
    rows = session.execute(
        select(Device.id, Device.index, Device.model, Device.device_type, Device.host_id)
        .join(Host, Host.id == Device.host_id)
        .where(Device.enabled.is_(True), Host.status == "online")
        .order_by(Device.host_id, Device.index)
        .with_for_update(of=Device, skip_locked=True)
    ).all()
    # Read after the locks are held: sees every allocation committed by a previous lock holder.
    held = set(session.scalars(select(Allocation.device_id).where(Allocation.released_at.is_(None))))
    free: dict[tuple[int, str], list[_FreeDevice]] = {}
    for row in rows:
        if row.id not in held:
            free.setdefault((row.host_id, row.device_type), []).append(_FreeDevice(row.id, row.index, row.model))
    return free


def _matches(model: str, wanted: str | None) -> bool:
    return wanted is None or wanted.casefold() in model.casefold()


def _capacity(session: Session, device_type: str, gpu_model: str | None) -> int:
    """The most matching enabled devices any schedulable host has, free or not."""
    counts: dict[int, int] = {}
    for host_id, model in session.execute(
        select(Device.host_id, Device.model)
        .join(Host, Host.id == Device.host_id)
        .where(Device.enabled.is_(True), Device.device_type == device_type, Host.status == "online")
    ):
        if _matches(model, gpu_model):
            counts[host_id] = counts.get(host_id, 0) + 1
    return max(counts.values(), default=0)


def _describe(job: Job, gpu_model: str | None) -> str:
    what = f"{job.devices} {job.device_type} device{'s' if job.devices != 1 else ''}"
    return f"{what} of model {gpu_model!r}" if gpu_model else what


def _place(
    session: Session,
    job: Job,
    free: dict[tuple[int, str], list[_FreeDevice]],
    hosts: dict[int, Host],
) -> tuple[list[tuple[Host, list[_FreeDevice]]], str | None]:
    """Pick hosts and devices for a job from `free`, or say why it must wait."""
    gpu_model = (job.spec.get("resources") or {}).get("gpu_model")
    fits: list[tuple[Host, list[_FreeDevice]]] = []
    largest = 0
    for (host_id, device_type), devices in free.items():
        if device_type != job.device_type:
            continue
        matching = [d for d in devices if _matches(d.model, gpu_model)]
        largest = max(largest, len(matching))
        if len(matching) >= job.devices:
            fits.append((hosts[host_id], matching[: job.devices]))
    if len(fits) >= job.nodes:
        # Best fit: hosts with the fewest free devices first keep large blocks for large jobs.
        fits.sort(key=lambda fit: (len(free[(fit[0].id, job.device_type)]), fit[0].name))
        return fits[: job.nodes], None

    need = _describe(job, gpu_model)
    capacity = _capacity(session, job.device_type, gpu_model)
    if job.nodes > 1:
        return [], f"needs {job.nodes} hosts with {need} free each; {len(fits)} have"
    if capacity < job.devices:
        return [], f"needs {need}; the largest online host has {capacity}"
    return [], f"needs {need}; largest free host has {largest}"


def _allocate(session: Session, report: PassReport) -> None:
    hosts = {h.id: h for h in session.scalars(select(Host).where(Host.status == "online"))}
    free = _free_devices(session)
    queued = session.scalars(
        select(Job)
        .where(Job.status == "queued", Job.cancel_requested.is_(False))
        .order_by(Job.priority.desc(), Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    for job in queued:
        placement, reason = _place(session, job, free, hosts)
        if reason is not None:
            job.wait_reason = reason
            report.waiting[job.id] = reason
            continue
        job.attempt += 1
        job.wait_reason = None
        for node_rank, (host, devices) in enumerate(placement):
            taken = {d.id for d in devices}
            key = (host.id, job.device_type)
            free[key] = [d for d in free[key] if d.id not in taken]
            for device in devices:
                session.add(
                    Allocation(
                        job_id=job.id, attempt=job.attempt, device_id=device.id, host_id=host.id, node_rank=node_rank
                    )
                )
            report.placed.append(NodeTask(job.id, job.attempt, node_rank, host.name, host.queue))
        names = ", ".join(host.name for host, _ in placement)
        set_status(session, job, "scheduled", f"attempt {job.attempt} on {names}")


def schedule_once(factory: sessionmaker[Session], dispatch: Dispatch, lost_after_seconds: float) -> PassReport:
    """One scheduler pass: lost hosts, stale allocations, then placement and dispatch."""
    report = PassReport()
    with writer_transaction(factory) as session:
        _reconcile(session, lost_after_seconds, report)
        _allocate(session, report)
    undelivered: dict[int, str] = {}
    for task in report.placed:
        if task.job_id in undelivered:
            continue
        try:
            dispatch(task)
        except Exception as exc:  # the broker is away: give the job back to the queue
            log.exception("could not send job %s to %s", task.job_id, task.queue)
            undelivered[task.job_id] = f"could not reach the broker for {task.queue}: {exc}"
    if undelivered:
        with writer_transaction(factory) as session:
            for job_id, reason in undelivered.items():
                job = session.get(Job, job_id, with_for_update=True)
                if job is not None and job.status == "scheduled":
                    release_allocations(session, job.id, job.attempt)
                    job.wait_reason = reason
                    set_status(session, job, "queued", reason)
        report.placed = [t for t in report.placed if t.job_id not in undelivered]
    return report


def run_scheduler(
    factory: sessionmaker[Session],
    dispatch: Dispatch,
    interval_seconds: float,
    lost_after_seconds: float,
    stop: threading.Event,
) -> None:
    """The scheduler process's loop: a pass every `interval_seconds` until `stop` is set."""
    log.info("scheduler running every %.1f s", interval_seconds)
    while not stop.is_set():
        try:
            report = schedule_once(factory, dispatch, lost_after_seconds)
            for task in report.placed:
                log.info("job %s attempt %s node %s → %s", task.job_id, task.attempt, task.node_rank, task.host)
            if report.requeued or report.failed:
                log.warning("jobs of lost hosts: requeued %s, failed %s", report.requeued, report.failed)
        except Exception:  # a database hiccup must not end the loop; the next pass retries
            log.exception("scheduler pass failed")
        stop.wait(interval_seconds)


def requeue_interrupted_jobs(session: Session, host: Host) -> list[int]:
    """A worker that (re)starts runs nothing yet: jobs still holding its devices were interrupted.

    They go back to the queue (or fail when out of attempts); a task for their old attempt that
    the broker redelivers later finds the attempt changed and does nothing.
    """
    jobs = session.scalars(
        select(Job)
        .where(
            Job.status.in_(ACTIVE_STATES),
            Job.id.in_(
                select(Allocation.job_id).where(Allocation.host_id == host.id, Allocation.released_at.is_(None))
            ),
        )
        .order_by(Job.id)
        .with_for_update()
    ).all()
    for job in jobs:
        retry_or_fail(session, job, f"worker on host {host.name} restarted")
    return [job.id for job in jobs]
