"""Run side by side: from a job's page, its spec under each chosen executor, each holding its host whole
(`resources.exclusive`), then the compare page of the new jobs."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Request
from fastapi.responses import RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session, get_settings
from server.config import Settings
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound, ServiceError
from server.services.scoping import get_visible_job
from server.services.side_by_side import run_side_by_side
from web.pages.deps import page_caller, require_csrf
from web.pages.render import error_page, not_found

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
    if not caller.can_write:
        return error_page(request, 403, "Read-only session", "You logged in with a read-only token.")
    try:
        job = get_visible_job(session, caller, job_id)
        ids = run_side_by_side(session, caller, job, job.team.name if job.team else None, executors, settings)
    except NotFound:
        return not_found(request, f"job #{job_id}")
    except FieldErrors as exc:
        problems = "; ".join(f"{e['field']}: {e['message']}" for e in exc.detail)
        return error_page(request, 422, "Cannot run side by side", problems)
    except ServiceError as exc:
        return error_page(request, exc.status_code, "Cannot run side by side", str(exc.detail))
    return RedirectResponse("/compare?" + "&".join(f"job={i}" for i in ids), status_code=303)
