"""The first half of a scheduler pass: making the database's view of running work honest again before placing.

Jobs whose tasks never started, jobs with a node on a lost host, allocations nobody will release, and queued
jobs whose cancel arrived while they were placed."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import PLACED_STATES, TERMINAL_STATES, Allocation, Host, HostStatus, Job, JobStatus, utcnow
from server.services.allocations import release_idle_allocations, still_stopping
from server.services.hosts import mark_lost_hosts
from server.services.job_status import set_status
from server.services.retry_policy import retry_or_fail

log = logging.getLogger(__name__)


@dataclass
class Reconciled:
    lost_hosts: list[str] = field(default_factory=list)
    requeued: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def reconcile(session: Session, lost_after_seconds: float, scheduled_timeout_seconds: float) -> Reconciled:
    """Unstarted jobs back to the queue, lost hosts marked and their jobs retried, stale allocations released,
    queued jobs with a cancel request cancelled."""
    done = Reconciled()
    _requeue_unstarted(session, scheduled_timeout_seconds, done)
    for host in mark_lost_hosts(session, lost_after_seconds):
        done.lost_hosts.append(host.name)
        log.warning("host %s lost: no heartbeat for %.0f s", host.name, lost_after_seconds)
    _retry_jobs_on_lost_hosts(session, done)

    now = utcnow()
    # Nothing on a lost host will report its end; a job that ended frees whatever is not still stopping.
    for allocation in session.scalars(
        select(Allocation).where(
            Allocation.released_at.is_(None),
            (Allocation.host_id.in_(select(Host.id).where(Host.status == HostStatus.LOST)))
            | (Allocation.job_id.in_(select(Job.id).where(Job.status.in_(TERMINAL_STATES))) & ~still_stopping()),
        )
    ):
        allocation.released_at = now

    for job in session.scalars(
        select(Job)
        .where(Job.status == JobStatus.QUEUED, Job.cancel_requested.is_(True))
        .with_for_update(skip_locked=True)
    ):
        set_status(session, job, JobStatus.CANCELLED, "cancelled while queued")
    return done


def _requeue_unstarted(session: Session, scheduled_timeout_seconds: float, done: Reconciled) -> None:
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
            (done.requeued if requeued else done.failed).append(job.id)
            continue
        release_idle_allocations(session, job.id)
        set_status(session, job, JobStatus.QUEUED, f"{reason}; back to the queue")
        done.requeued.append(job.id)


def _retry_jobs_on_lost_hosts(session: Session, done: Reconciled) -> None:
    """A job whose current attempt has a node on a lost host goes back to the queue as a whole: its nodes on
    live hosts see the attempt over at their next poll and stop, instead of waiting in a collective or at the
    rendezvous for the lost node until a timeout."""
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
            done.requeued.append(job.id)
        else:
            done.failed.append(job.id)
