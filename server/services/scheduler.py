"""Matching queued jobs to free devices, atomically, and keeping allocations honest.

One pass (`schedule_once`) runs in a single database transaction that is the only writer of
allocations while it runs:

- PostgreSQL: a pass first takes a transaction-scoped advisory lock; a scheduler that cannot get
  it skips its pass, because another one is placing. Passes are therefore serial, and the queue
  is placed in priority order whatever number of schedulers run (with row locks alone, two
  schedulers would each lock part of the queue and place its tail before its head). Device and
  job rows are still locked (`FOR UPDATE SKIP LOCKED`, skipping rows an admin or a cancel holds)
  and the live allocations read after the locks are held, and a partial unique index refuses a
  second live allocation of a device.
- SQLite: the transaction starts with `BEGIN IMMEDIATE`, which takes the database's write lock.

Tasks are sent to the hosts' Celery queues only after the transaction commits, so a worker
never receives a job the database does not yet show as scheduled.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import ColumnElement, func, select, text
from sqlalchemy.orm import Session, sessionmaker

from server.config import get_settings
from server.models import TERMINAL_STATES, Allocation, Device, Host, HostStatus, Job, JobEvent, JobStatus, Team, utcnow
from server.models.host import POOLS
from server.models.states import PLACED_STATES
from server.services.hosts import mark_lost_hosts, model_matches
from server.services.job_status import set_status
from server.services.placement import (
    FreeByHost,
    FreeDevice,
    PlacedNode,
    exclusive,
    for_job,
    head_claim,
    place,
    wait_reason,
    without_hosts,
)
from server.services.scheduler_wakeup import SchedulerWakeup

log = logging.getLogger(__name__)

RUN_JOB_TASK = "worker.run_job"
SCHEDULER_LOCK_KEY = 0x5F0A70  # the advisory lock a PostgreSQL scheduler pass holds
DEFAULT_SCHEDULED_TIMEOUT_SECONDS = 300.0


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


def _still_stopping() -> ColumnElement[bool]:
    """An allocation whose node's trainer started on a host that is not lost and has not reported its end:
    its worker is stopping it now and frees the devices when it has exited, so no one else gets them before."""
    return Allocation.started_at.is_not(None) & Allocation.host_id.in_(
        select(Host.id).where(Host.status != HostStatus.LOST)
    )


def release_idle_allocations(session: Session, job_id: int) -> int:
    """Release a job's live allocations except those of nodes still stopping (see `_still_stopping`)."""
    now = utcnow()
    allocations = list(
        session.scalars(
            select(Allocation).where(Allocation.job_id == job_id, Allocation.released_at.is_(None), ~_still_stopping())
        )
    )
    for allocation in allocations:
        allocation.released_at = now
    return len(allocations)


def started_attempts(session: Session, job_id: int) -> int:
    """How many times the trainer of a job started; an attempt that never ran does not count."""
    return (
        session.scalar(
            select(func.count())
            .select_from(JobEvent)
            .where(JobEvent.job_id == job_id, JobEvent.status == JobStatus.RUNNING)
        )
        or 0
    )


def retry_or_fail(session: Session, job: Job, reason: str) -> bool:
    """An infrastructure failure: back to the queue while attempts remain, else failed. True if requeued.

    Either way the attempt is over: its other nodes find it so at their next poll and stop their process
    group, then free their devices (which stay held until then)."""
    release_idle_allocations(session, job.id)
    if job.cancel_requested:
        set_status(session, job, JobStatus.CANCELLED, reason)
        return False
    used = started_attempts(session, job.id)
    if used < job.max_attempts:
        job.token_hash = None
        job.error = None  # a node's error seen while the attempt was failing is not the job's
        set_status(session, job, JobStatus.QUEUED, f"{reason}; retrying ({used} of {job.max_attempts} attempts used)")
        return True
    job.error = f"{reason}; no attempts left ({used} of {job.max_attempts} used)"
    set_status(session, job, JobStatus.FAILED, job.error)
    return False


def _requeue_unstarted(session: Session, scheduled_timeout_seconds: float, report: PassReport) -> None:
    """Jobs with a node placed long ago whose trainer never started: its task was lost (a broker that restarted
    empty, a worker that died before taking it). Back to the queue. An attempt no node of which ran is not
    counted; when another node did start, it waits at the rendezvous for the missing one and is stopped now
    rather than after the rendezvous timeout, and the attempt counts (its trainer ran)."""
    cutoff = utcnow() - timedelta(seconds=scheduled_timeout_seconds)
    late = (
        select(Allocation.job_id)
        .where(
            Allocation.released_at.is_(None),
            Allocation.attempt == Job.attempt,
            Allocation.started_at.is_(None),
            Allocation.created_at < cutoff,
        )
        .correlate(Job)
    )
    stuck = session.scalars(
        select(Job)
        .where(Job.status.in_(PLACED_STATES), Job.id.in_(late))
        .order_by(Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    for job in stuck:
        missing = sorted(
            set(
                session.scalars(
                    select(Allocation.node_rank).where(
                        Allocation.job_id == job.id,
                        Allocation.attempt == job.attempt,
                        Allocation.released_at.is_(None),
                        Allocation.started_at.is_(None),
                    )
                )
            )
        )
        nodes = ", ".join(str(rank) for rank in missing)
        reason = f"attempt {job.attempt}: node {nodes} did not start within {scheduled_timeout_seconds:g} s"
        if job.status == JobStatus.RUNNING:
            requeued = retry_or_fail(session, job, reason)
            (report.requeued if requeued else report.failed).append(job.id)
            continue
        release_idle_allocations(session, job.id)
        job.token_hash = None
        set_status(session, job, JobStatus.QUEUED, f"{reason}; back to the queue")
        report.requeued.append(job.id)


def _reconcile(
    session: Session, lost_after_seconds: float, scheduled_timeout_seconds: float, report: PassReport
) -> None:
    _requeue_unstarted(session, scheduled_timeout_seconds, report)
    for host in mark_lost_hosts(session, lost_after_seconds):
        report.lost_hosts.append(host.name)
        log.warning("host %s lost: no heartbeat for %.0f s", host.name, lost_after_seconds)

    # A job whose current attempt has a node on a lost host goes back to the queue as a whole: its nodes on
    # live hosts see the attempt over at their next poll and stop, instead of waiting in a collective or at
    # the rendezvous for the lost node until a timeout.
    on_lost_host = (
        select(Allocation.job_id)
        .join(Host, Host.id == Allocation.host_id)
        .where(Allocation.released_at.is_(None), Allocation.attempt == Job.attempt, Host.status == HostStatus.LOST)
        .correlate(Job)
    )
    orphaned = session.scalars(
        select(Job).where(Job.status.in_(PLACED_STATES), Job.id.in_(on_lost_host)).order_by(Job.id).with_for_update()
    ).all()
    for job in orphaned:
        hosts = session.scalars(
            select(Host.name)
            .join(Allocation, Allocation.host_id == Host.id)
            .where(
                Allocation.job_id == job.id,
                Allocation.attempt == job.attempt,
                Allocation.released_at.is_(None),
                Host.status == HostStatus.LOST,
            )
            .distinct()
        ).all()
        if retry_or_fail(session, job, f"host {', '.join(sorted(hosts))} lost"):
            report.requeued.append(job.id)
        else:
            report.failed.append(job.id)

    now = utcnow()
    # Nothing on a lost host will report its end; a job that ended frees whatever is not still stopping.
    for allocation in session.scalars(
        select(Allocation).where(
            Allocation.released_at.is_(None),
            (Allocation.host_id.in_(select(Host.id).where(Host.status == HostStatus.LOST)))
            | (Allocation.job_id.in_(select(Job.id).where(Job.status.in_(TERMINAL_STATES))) & ~_still_stopping()),
        )
    ):
        allocation.released_at = now

    for job in session.scalars(
        select(Job)
        .where(Job.status == JobStatus.QUEUED, Job.cancel_requested.is_(True))
        .with_for_update(skip_locked=True)
    ):
        set_status(session, job, JobStatus.CANCELLED, "cancelled while queued")


def _free_devices(session: Session) -> FreeByHost:
    """Free, enabled devices of online hosts, locked for this transaction, by (host id, device type)."""
    rows = session.execute(
        select(Device.id, Device.index, Device.model, Device.device_type, Device.host_id)
        .join(Host, Host.id == Device.host_id)
        .where(Device.enabled.is_(True), Host.status == HostStatus.ONLINE)
        .order_by(Device.host_id, Device.index)
        .with_for_update(of=Device, skip_locked=True)
    ).all()
    # Read after the locks are held: sees every allocation committed by a previous lock holder.
    held = set(session.scalars(select(Allocation.device_id).where(Allocation.released_at.is_(None))))
    free: FreeByHost = {}
    for row in rows:
        if row.id not in held:
            free.setdefault((row.host_id, row.device_type), []).append(FreeDevice(row.id, row.index, row.model))
    return free


def _held_hosts(session: Session) -> tuple[set[int], set[int]]:
    """Hosts where a device is in use now, and those of them an exclusive job holds."""
    live = session.execute(
        select(Allocation.host_id, Job.spec)
        .join(Job, Job.id == Allocation.job_id)
        .where(Allocation.released_at.is_(None))
    ).all()
    return {host_id for host_id, _ in live}, {host_id for host_id, spec in live if exclusive(spec)}


def _host_capacity(session: Session, device_type: str, gpu_model: str | None) -> dict[int, int]:
    """Matching enabled devices per online host, free or not."""
    counts: dict[int, int] = {}
    for host_id, model in session.execute(
        select(Device.host_id, Device.model)
        .join(Host, Host.id == Device.host_id)
        .where(Device.enabled.is_(True), Device.device_type == device_type, Host.status == HostStatus.ONLINE)
    ):
        if model_matches(model, gpu_model):
            counts[host_id] = counts.get(host_id, 0) + 1
    return counts


def _team_usage(session: Session) -> dict[int, int]:
    """Devices each team's jobs hold now."""
    return dict(
        session.execute(
            select(Job.team_id, func.count(Allocation.id))
            .join(Allocation, Allocation.job_id == Job.id)
            .where(Allocation.released_at.is_(None), Job.team_id.is_not(None))
            .group_by(Job.team_id)
        ).all()
    )


def _quota_reason(job: Job, usage: dict[int, int], quotas: dict[int, tuple[str, int]]) -> str | None:
    if job.team_id is None or job.team_id not in quotas:
        return None
    name, limit = quotas[job.team_id]
    need = job.devices * job.nodes
    used = usage.get(job.team_id, 0)
    if used + need <= limit:
        return None
    return f"team {name} quota: {used} of {limit} devices in use, needs {need} more"


def _allocate(session: Session, report: PassReport) -> None:
    """Place queued jobs by priority, then age. The first job that cannot start (the head) claims the hosts
    it will start on; a later job is placed (backfilled) only on devices outside that claim, so it never
    delays the head. A job held back by its team's quota claims nothing: it could not start anyway."""
    hosts = {h.id: h for h in session.scalars(select(Host).where(Host.status == HostStatus.ONLINE))}
    busy, held_whole = _held_hosts(session)
    free = without_hosts(_free_devices(session), held_whole)
    usage = _team_usage(session)
    quotas = {
        team.id: (team.name, team.max_devices)
        for team in session.scalars(select(Team).where(Team.max_devices.is_not(None)))
        if team.max_devices is not None
    }
    queued = session.scalars(
        select(Job)
        .where(Job.status == JobStatus.QUEUED, Job.cancel_requested.is_(False))
        .order_by(Job.priority.desc(), Job.id)
        .with_for_update(skip_locked=True)
    ).all()
    head: Job | None = None
    claimed: set[tuple[int, str]] = set()
    capacities: dict[tuple[str, str | None], dict[int, int]] = {}

    def capacity(device_type: str, gpu_model: str | None) -> dict[int, int]:
        """One query per kind of device a pass, not one per waiting job."""
        if (device_type, gpu_model) not in capacities:
            capacities[(device_type, gpu_model)] = _host_capacity(session, device_type, gpu_model)
        return capacities[(device_type, gpu_model)]

    for job in queued:
        reason = _quota_reason(job, usage, quotas)
        placement: list[PlacedNode] = []
        if reason is None:
            usable = for_job(job, free, busy)
            unclaimed = {key: devices for key, devices in usable.items() if key not in claimed}
            placement = place(job, unclaimed)
            if not placement:
                if head is not None and place(job, usable):
                    head_name = _head_name(head, job)
                    reason = f"would delay {head_name} at the head of the queue; waits for hosts it does not need"
                else:
                    reason = wait_reason(job, usable, capacity)
                    if head is None:
                        claimed = head_claim(job, free, capacity)
                        head = job if claimed else None
        if reason is not None:
            job.wait_reason = reason
            report.waiting[job.id] = reason
            continue
        job.attempt += 1
        job.wait_reason = None
        for node_rank, node in enumerate(placement):
            host = hosts[node.host_id]
            taken = {device.id for device, _ in node.devices}
            key = (host.id, job.device_type)
            free[key] = [d for d in free[key] if d.id not in taken]
            for device, pool in node.devices:
                session.add(
                    Allocation(
                        job_id=job.id,
                        attempt=job.attempt,
                        device_id=device.id,
                        host_id=host.id,
                        node_rank=node_rank,
                        pool=pool,
                    )
                )
            report.placed.append(NodeTask(job.id, job.attempt, node_rank, host.name, host.queue))
        placed_hosts = {node.host_id for node in placement}
        busy |= placed_hosts
        if exclusive(job.spec):
            free = without_hosts(free, placed_hosts)
        if job.team_id is not None:
            usage[job.team_id] = usage.get(job.team_id, 0) + job.devices * job.nodes
        set_status(session, job, JobStatus.SCHEDULED, f"attempt {job.attempt} on {_placed_on(placement, hosts)}")


def _head_name(head: Job, job: Job) -> str:
    """The head of the queue as the waiting job's readers may see it: by id only in the same team (the reason
    is shown to whoever sees the waiting job, and another team's job is a 404 to them)."""
    if head.team_id is not None and head.team_id == job.team_id:
        return f"job {head.id}"
    return "a higher-priority job of another team"


def _placed_on(placement: list[PlacedNode], hosts: dict[int, Host]) -> str:
    """ "alpha, beta", or with pools "alpha (rollout), beta (trainer)"."""
    names = []
    for node in placement:
        pools = sorted({pool for _, pool in node.devices if pool}, key=POOLS.index)
        names.append(hosts[node.host_id].name + (f" ({' + '.join(pools)})" if pools else ""))
    return ", ".join(names)


def _only_pass_running(session: Session) -> bool:
    """PostgreSQL: take the scheduler's advisory lock for this transaction, False when another pass has it.
    SQLite: BEGIN IMMEDIATE already made this transaction the only writer."""
    if session.get_bind().dialect.name != "postgresql":
        return True
    return bool(session.scalar(text("SELECT pg_try_advisory_xact_lock(:key)"), {"key": SCHEDULER_LOCK_KEY}))


def schedule_once(
    factory: sessionmaker[Session],
    dispatch: Dispatch,
    lost_after_seconds: float,
    scheduled_timeout_seconds: float = DEFAULT_SCHEDULED_TIMEOUT_SECONDS,
) -> PassReport:
    """One scheduler pass: unstarted jobs, lost hosts, stale allocations, then placement and dispatch."""
    report = PassReport()
    with writer_transaction(factory) as session:
        if not _only_pass_running(session):
            return report
        _reconcile(session, lost_after_seconds, scheduled_timeout_seconds, report)
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
                if job is not None and job.status == JobStatus.SCHEDULED:
                    release_allocations(session, job.id, job.attempt)
                    job.wait_reason = reason
                    set_status(session, job, JobStatus.QUEUED, reason)
        report.placed = [t for t in report.placed if t.job_id not in undelivered]
    return report


def run_scheduler(
    factory: sessionmaker[Session],
    dispatch: Dispatch,
    interval_seconds: float,
    lost_after_seconds: float,
    wakeup: SchedulerWakeup,
) -> None:
    """The scheduler process's loop: a pass whenever woken, and at least every `interval_seconds`, until
    `wakeup.stop` is set."""
    log.info("scheduler running every %.1f s", interval_seconds)
    scheduled_timeout_seconds = get_settings().scheduled_timeout_seconds
    while not wakeup.stop.is_set():
        try:
            report = schedule_once(factory, dispatch, lost_after_seconds, scheduled_timeout_seconds)
            for task in report.placed:
                log.info("job %s attempt %s node %s → %s", task.job_id, task.attempt, task.node_rank, task.host)
            if report.requeued or report.failed:
                log.warning(
                    "jobs that lost their host or never started: requeued %s, failed %s", report.requeued, report.failed
                )
        except Exception:  # a database hiccup must not end the loop; the next pass retries
            log.exception("scheduler pass failed")
        wakeup.wait(interval_seconds)
    wakeup.close()


def requeue_jobs_on_host(session: Session, host: Host, reason: str) -> list[int]:
    """Send every active job whose current attempt holds a device of `host` back to the queue (or fail it when
    out of attempts); its nodes elsewhere are stopped by their workers.

    A task for a job's old attempt that the broker delivers later finds the attempt changed and does nothing.
    """
    on_host = (
        select(Allocation.job_id)
        .where(Allocation.host_id == host.id, Allocation.released_at.is_(None), Allocation.attempt == Job.attempt)
        .correlate(Job)
    )
    jobs = session.scalars(
        select(Job).where(Job.status.in_(PLACED_STATES), Job.id.in_(on_host)).order_by(Job.id).with_for_update()
    ).all()
    for job in jobs:
        retry_or_fail(session, job, reason)
    return [job.id for job in jobs]


def requeue_interrupted_jobs(session: Session, host: Host) -> list[int]:
    """A worker that (re)starts runs nothing yet: every device of its host is free, and the jobs whose current
    attempt held one were interrupted."""
    requeued = requeue_jobs_on_host(session, host, f"worker on host {host.name} restarted")
    now = utcnow()
    for allocation in session.scalars(
        select(Allocation).where(Allocation.host_id == host.id, Allocation.released_at.is_(None))
    ):
        allocation.released_at = now
    return requeued
