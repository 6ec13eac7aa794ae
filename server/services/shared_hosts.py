"""Which other jobs shared a host with a job while it ran: timing taken beside them is not the executor's alone.

Read from the allocation history (every device a job attempt held, with when it was taken and released):
two jobs shared a host when each held a device of it at an overlapping time. Jobs that ran with
`resources.exclusive: true` share with nobody (the scheduler keeps the host to them).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import and_, func, select
from sqlalchemy.orm import Session, aliased

from server.models import Allocation, Host, utcnow


@dataclass(frozen=True)
class SharedJob:
    """Another job that held devices on one of the job's hosts while the job held its own."""

    job_id: int
    host: str


def shared_with(session: Session, job_ids: Sequence[int]) -> dict[int, list[SharedJob]]:
    """For each job, the other jobs that held devices on the same hosts at the same time, by job id."""
    if not job_ids:
        return {}
    mine, theirs = aliased(Allocation), aliased(Allocation)
    now = utcnow()
    rows = session.execute(
        select(mine.job_id, theirs.job_id, Host.name)
        .join(
            theirs,
            and_(
                theirs.host_id == mine.host_id,
                theirs.job_id != mine.job_id,
                theirs.created_at < func.coalesce(mine.released_at, now),
                mine.created_at < func.coalesce(theirs.released_at, now),
            ),
        )
        .join(Host, Host.id == mine.host_id)
        .where(mine.job_id.in_(job_ids))
        .distinct()
        .order_by(mine.job_id, theirs.job_id, Host.name)
    )
    out: dict[int, list[SharedJob]] = {job_id: [] for job_id in job_ids}
    for job_id, other, host in rows:
        if all(s.job_id != other for s in out[job_id]):
            out[job_id].append(SharedJob(other, host))
    return out
