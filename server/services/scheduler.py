"""The scheduler process: passes that match queued jobs to free devices, atomically, and dispatch them.

A pass reconciles (reconcile), then places (placement_pass); a job that fails for the infrastructure
follows the retry policy (retry_policy).

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
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy import select, text
from sqlalchemy.orm import Session, sessionmaker

from server.config import get_settings
from server.db import session_scope
from server.models import Allocation, Job, JobStatus, RewardService, ServiceState, utcnow
from server.services.allocations import release_allocations
from server.services.job_status import set_status
from server.services.placement_pass import NodeTask, place_queued_jobs
from server.services.reconcile import reconcile
from server.services.scheduler_wakeup import SchedulerWakeup
from server.services.service_placement import ServiceTask, reconcile_services
from server.services.service_state import set_state

log = logging.getLogger(__name__)

RUN_JOB_TASK = "worker.run_job"
SCHEDULER_LOCK_KEY = 0x5F0A70  # the advisory lock a PostgreSQL scheduler pass holds
DEFAULT_SCHEDULED_TIMEOUT_SECONDS = 300.0


@dataclass
class PassReport:
    placed: list[NodeTask] = field(default_factory=list)
    waiting: dict[int, str] = field(default_factory=dict)
    lost_hosts: list[str] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    services: list[ServiceTask] = field(default_factory=list)


Dispatch = Callable[[NodeTask | ServiceTask], None]


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
    with session_scope(factory) as session:
        if not _only_pass_running(session):
            return report
        reconciled = reconcile(session, lost_after_seconds, scheduled_timeout_seconds)
        reconcile_services(session, scheduled_timeout_seconds)
        placed = place_queued_jobs(session)
    report.lost_hosts, report.requeued, report.failed = reconciled.lost_hosts, reconciled.requeued, reconciled.failed
    report.placed, report.waiting, report.services = placed.tasks, placed.waiting, placed.services
    _dispatch_services(factory, dispatch, report)
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
        with session_scope(factory) as session:
            for job_id, reason in undelivered.items():
                job = session.get(Job, job_id, with_for_update=True)
                if job is not None and job.status == JobStatus.SCHEDULED:
                    release_allocations(session, job.id, job.attempt)
                    job.wait_reason = reason
                    set_status(session, job, JobStatus.QUEUED, reason)
        report.placed = [t for t in report.placed if t.job_id not in undelivered]
    return report


def _dispatch_services(factory: sessionmaker[Session], dispatch: Dispatch, report: PassReport) -> None:
    """Send each placed service's task; one the broker did not take goes back to pending, its devices freed."""
    undelivered: dict[int, str] = {}
    for task in report.services:
        try:
            dispatch(task)
        except Exception as exc:  # the broker is away
            log.exception("could not send service %s to %s", task.service_id, task.queue)
            undelivered[task.service_id] = f"could not reach the broker for {task.queue}: {exc}"
    if not undelivered:
        return
    with session_scope(factory) as session:
        for service_id, reason in undelivered.items():
            service = session.get(RewardService, service_id, with_for_update=True)
            if service is None or service.state != ServiceState.STARTING:
                continue
            for allocation in session.scalars(
                select(Allocation).where(Allocation.service_id == service_id, Allocation.released_at.is_(None))
            ):
                allocation.released_at = utcnow()
            set_state(session, service, ServiceState.PENDING)
            service.wait_reason = reason
    report.services = [t for t in report.services if t.service_id not in undelivered]


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
