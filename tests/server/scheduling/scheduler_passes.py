"""What the scheduling tests do around a pass: run one, end a job, read a job or the live allocations, lose a
host."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Allocation, Host, Job
from server.services.job_status import set_status
from server.services.placement_pass import NodeTask
from server.services.scheduler import PassReport, schedule_once

AddHost = Callable[..., Host]
AddJob = Callable[..., Job]

LOST_AFTER = 30.0


def run_pass(factory: sessionmaker[Session], sent: list[NodeTask] | None = None) -> PassReport:
    return schedule_once(factory, (sent if sent is not None else []).append, LOST_AFTER)


def finish(factory: sessionmaker[Session], job_id: int, status: str = "succeeded") -> None:
    with factory.begin() as session:
        set_status(session, session.get(Job, job_id), status)


def job(factory: sessionmaker[Session], job_id: int) -> Job:
    with factory() as session:
        return session.get(Job, job_id)


def live_allocations(factory: sessionmaker[Session]) -> list[Allocation]:
    with factory() as session:
        return list(session.scalars(select(Allocation).where(Allocation.released_at.is_(None))))


def lose_host(factory: sessionmaker[Session], name: str) -> None:
    with factory.begin() as session:
        host = session.scalar(select(Host).where(Host.name == name))
        host.last_heartbeat_at = host.last_heartbeat_at.replace(year=2000)
