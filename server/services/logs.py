"""Reading a job's log lines forward from an offset, for tailing pages and `sfumato logs -f`."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import LogLine
from server.schemas.logs import LogLineOut, LogPage


def read_logs(session: Session, job_id: int, offset: int = 0, limit: int = 1000) -> LogPage:
    """Lines with id > offset, oldest first; pass `next_offset` back to continue where this page ended."""
    rows = session.scalars(
        select(LogLine).where(LogLine.job_id == job_id, LogLine.id > offset).order_by(LogLine.id).limit(limit)
    ).all()
    next_offset = rows[-1].id if rows else offset
    return LogPage(lines=[LogLineOut.model_validate(r) for r in rows], next_offset=next_offset)
