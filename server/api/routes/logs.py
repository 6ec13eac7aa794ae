"""A job's log lines, read forward from an offset."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.api.deps import SessionDep, VisibleJob
from server.schemas.logs import LogPage
from server.services.logs import read_logs

router = APIRouter(tags=["logs"])


@router.get("/jobs/{job_id}/logs", response_model=LogPage)
def get_logs(
    job: VisibleJob,
    session: SessionDep,
    offset: Annotated[int, Query(ge=0, le=2**63 - 1, description="the last line id already seen")] = 0,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 1000,
) -> LogPage:
    return read_logs(session, job.id, offset, limit)
