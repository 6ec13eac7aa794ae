"""Run side by side: from a job's page, its spec under each chosen executor, each holding its host whole
(`resources.exclusive`), then the compare page of the new jobs."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import Response
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session, get_settings
from server.config import Settings
from server.services.auth import Caller
from server.services.scoping import get_visible_job
from server.services.side_by_side import run_side_by_side
from web.pages.deps import page_caller, require_csrf
from web.pages.page_write import page_write

router = APIRouter()


@router.post("/jobs/{job_id}/side-by-side", dependencies=[Depends(require_csrf)])
async def side_by_side(
    request: Request,
    job_id: JobId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    executors = [value for value in (await request.form()).getlist("executor") if isinstance(value, str)]

    def write() -> str:
        job = get_visible_job(session, caller, job_id)
        ids = run_side_by_side(session, caller, job, job.team.name if job.team else None, executors, settings)
        return "/compare?" + "&".join(f"job={i}" for i in ids)

    return page_write(request, caller, f"job #{job_id}", "Cannot run side by side", write)
