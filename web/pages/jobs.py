"""The jobs table, with filters, a live-refreshed body, and boxes to tick for Compare."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.services.auth import Caller
from server.services.job_reads import JobFilters, list_jobs
from server.states import JOB_STATES
from trainer.spec import ALGORITHMS, EXECUTORS
from web.pages.deps import page_caller
from web.pages.render import render

router = APIRouter()
PAGE_SIZE = 200


def _rows_context(
    session: Session, caller: Caller, status: str, executor: str, algorithm: str, q: str, selected: list[int]
) -> dict[str, Any]:
    filters = JobFilters(
        statuses=(status,) if status in JOB_STATES else (),
        executor=executor or None,
        algorithm=algorithm or None,
        name=q.strip() or None,
    )
    page = list_jobs(session, caller, filters, limit=PAGE_SIZE)
    form = {"status": status, "executor": executor, "algorithm": algorithm, "q": q}
    return {"jobs": page.items, "total": page.total, "selected": set(selected), "filters": form}


@router.get("/")
def home() -> RedirectResponse:
    return RedirectResponse("/jobs", status_code=303)


@router.get("/jobs", response_class=HTMLResponse)
def jobs_page(
    request: Request,
    status: str = "",
    executor: str = "",
    algorithm: str = "",
    q: str = "",
    job: list[int] = Query([]),
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    context = _rows_context(session, caller, status, executor, algorithm, q, job)
    context.update(section="jobs", statuses=JOB_STATES, executors=EXECUTORS, algorithms=ALGORITHMS)
    return render(request, "jobs.html", context)


@router.get("/jobs/rows", response_class=HTMLResponse)
def job_rows(
    request: Request,
    status: str = "",
    executor: str = "",
    algorithm: str = "",
    q: str = "",
    job: list[int] = Query([]),
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The table body alone, polled by htmx every 2 s; the ticked compare boxes stay ticked."""
    context = _rows_context(session, caller, status, executor, algorithm, q, job)
    return render(request, "partials/job_rows.html", context)
