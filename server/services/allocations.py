"""Freeing the devices a job attempt holds: its allocations' `released_at`."""

from __future__ import annotations

from sqlalchemy import ColumnElement, select
from sqlalchemy.orm import Session

from server.models import Allocation, Host, HostStatus, utcnow


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


def still_stopping() -> ColumnElement[bool]:
    """An allocation whose node's trainer started on a host that is not lost and has not reported its end:
    its worker is stopping it now and frees the devices when it has exited, so no one else gets them before."""
    return Allocation.started_at.is_not(None) & Allocation.host_id.in_(
        select(Host.id).where(Host.status != HostStatus.LOST)
    )


def release_idle_allocations(session: Session, job_id: int) -> int:
    """Release a job's live allocations except those of nodes still stopping (see `still_stopping`)."""
    now = utcnow()
    allocations = list(
        session.scalars(
            select(Allocation).where(Allocation.job_id == job_id, Allocation.released_at.is_(None), ~still_stopping())
        )
    )
    for allocation in allocations:
        allocation.released_at = now
    return len(allocations)
