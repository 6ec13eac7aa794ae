"""One job: header with cancel / retry / clone, live charts, logs with follow, the spec and the artifacts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session
from server.models import TERMINAL_STATES
from server.schemas.jobs import JobDetail
from server.services import pages
from server.services.artifacts import list_artifacts
from server.services.auth import Caller
from server.services.current_points import current_points
from server.services.errors import NotFound, ServiceError
from server.services.job_reads import job_detail
from server.services.jobs import cancel_job, retry_job
from server.services.logs import read_logs
from server.services.metric_reads import latest_points, metric_keys, metric_series, points_after
from server.services.scoping import get_visible_job
from web.pages.deps import PageNotFound, page_caller, require_csrf, run_as_page_caller, visible_page_job
from web.pages.render import error_page, not_found, render

router = APIRouter()

# The job page's charts. keys: always asked; prefixes: every reported key starting with one; band: [centre,
# half-width] drawn as a shaded band; right: keys on a second y axis; stack: stacked areas; unit: axis format.
CHARTS: list[dict[str, Any]] = [
    {
        "id": "reward",
        "title": "Reward",
        "keys": ["reward/mean"],
        "prefixes": ["reward/"],
        "band": ["reward/mean", "reward/std"],
    },
    {
        "id": "loss",
        "title": "Loss · KL · clip fraction",
        "keys": ["loss", "kl", "clip_frac"],
        "right": ["kl", "clip_frac", "approx_kl"],
    },
    {
        "id": "throughput",
        "title": "Throughput",
        "keys": ["throughput/samples_per_s"],
        "prefixes": ["throughput/"],
        "unit": "samples/s",
    },
    {
        "id": "time",
        "title": "Step time split",
        "keys": ["time/rollout", "time/reward", "time/train", "time/sync"],
        "stack": True,
        "unit": "s",
    },
    {"id": "memory", "title": "Peak memory", "keys": ["memory/peak_bytes"], "prefixes": ["memory/"], "unit": "bytes"},
    {"id": "executor", "title": "Executor metrics", "keys": [], "prefixes": ["executor/"]},
]
MAX_APPEND = 5000


def _header_context(job: JobDetail) -> dict[str, Any]:
    placement: dict[str, list[int]] = {}
    for alloc in job.allocations:
        placement.setdefault(alloc.host, []).append(alloc.device_index)
    return {"job": job, "placement": placement, "live": job.status not in TERMINAL_STATES}


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: JobId) -> HTMLResponse:
    return await run_as_page_caller(request, _job_page, request, job_id)


def _job_page(session: Session, caller: Caller, request: Request, job_id: int) -> HTMLResponse:
    job = _visible_detail(session, caller, job_id)
    lines = pages.log_tail(session, job.id)
    current = current_points(session, job.id)
    context = _header_context(job)
    context.update(
        section="jobs",
        charts=CHARTS,
        latest=latest_points(session, job.id, current=current),
        logs=lines,
        last_log_id=lines[-1].id if lines else 0,
        artifacts=list_artifacts(session, job.id).items,
        has_samples=pages.has_current_samples(session, job.id, current),
    )
    return render(request, "job.html", context)


@router.get("/jobs/{job_id}/header", response_class=HTMLResponse)
async def job_header(request: Request, job_id: JobId) -> HTMLResponse:
    """The header alone, polled while the job is active; the poll stops once it has finished."""
    return await run_as_page_caller(request, _job_header, request, job_id)


def _job_header(session: Session, caller: Caller, request: Request, job_id: int) -> HTMLResponse:
    return render(request, "partials/job_header.html", _header_context(_visible_detail(session, caller, job_id)))


def _visible_detail(session: Session, caller: Caller, job_id: int) -> JobDetail:
    """The path's job as services.job_reads.job_detail shows it (spec, events, allocations); else the 404 page."""
    try:
        return job_detail(session, caller, job_id)
    except NotFound:
        raise PageNotFound(f"job #{job_id}") from None


@router.get("/jobs/{job_id}/logs", response_class=HTMLResponse)
async def job_logs(request: Request, job_id: JobId, after: int = 0) -> HTMLResponse:
    """Log lines after `after`, then the next poller (none once the job has finished and nothing came)."""
    return await run_as_page_caller(request, _job_logs, request, job_id, after)


def _job_logs(session: Session, caller: Caller, request: Request, job_id: int, after: int) -> HTMLResponse:
    job = visible_page_job(session, caller, job_id)
    page = read_logs(session, job.id, offset=after)
    live = job.status not in TERMINAL_STATES or bool(page.lines)
    context = {"job": job, "logs": page.lines, "last_log_id": page.next_offset, "live": live, "fragment": True}
    return render(request, "partials/log_lines.html", context)


@router.get("/jobs/{job_id}/metrics.json")
async def job_metrics(
    request: Request,
    job_id: JobId,
    keys: str = "",
    prefixes: str = "",
    max_points: int = Query(1000, ge=10, le=20000),
    after_step: int | None = None,
    walls: bool = False,
) -> Response:
    """Chart data for the pages (session cookie): series downsampled by the metrics service to about the
    chart's width, or the raw points after `after_step` for live appends. `walls` adds wall-clock times."""
    return await run_as_page_caller(request, _job_metrics, job_id, keys, prefixes, max_points, after_step, walls)


def _job_metrics(
    session: Session,
    caller: Caller,
    job_id: int,
    keys: str,
    prefixes: str,
    max_points: int,
    after_step: int | None,
    walls: bool,
) -> Response:
    try:
        job = get_visible_job(session, caller, job_id)
    except NotFound:
        return JSONResponse({"detail": f"job {job_id} not found"}, status_code=404)
    wanted = list(dict.fromkeys(k for k in keys.split(",") if k))
    starts = tuple(p for p in prefixes.split(",") if p)
    if starts:
        wanted += [k for k in metric_keys(session, job.id) if k.startswith(starts) and k not in wanted]
    series: list[dict[str, Any]] = []
    truncated = False
    if after_step is None:
        for s in metric_series(session, job.id, wanted, max_points).series if wanted else []:
            series.append(_present(s.model_dump(exclude_none=True), walls))
    else:
        for key, points in points_after(session, job.id, wanted, after_step, MAX_APPEND).items():
            truncated = truncated or len(points) >= MAX_APPEND
            found = {"key": key, "steps": [p.step for p in points], "values": [p.value for p in points]}
            if walls:
                found["wall_times"] = [p.wall_time for p in points]
            series.append(found)
    return JSONResponse({"status": job.status, "series": series, "truncated": truncated})


def _present(series: dict[str, Any], walls: bool) -> dict[str, Any]:
    """A series as the charts draw it: only the steps where the key has a value (and its wall times only
    when asked for)."""
    kept = [i for i, value in enumerate(series["values"]) if value is not None]
    columns = ["steps", "values", *(c for c in ("minimum", "maximum") if c in series)]
    columns += ["wall_times"] if walls else []
    return {"key": series["key"]} | {column: [series[column][i] for i in kept] for column in columns}


def _act(request: Request, job_id: int, caller: Caller, session: Session, action: str) -> Response:
    if not caller.can_write:
        return error_page(request, 403, "Read-only session", "You logged in with a read-only token.")
    try:
        if action == "cancel":
            cancel_job(session, caller, job_id)
        else:
            retry_job(session, caller, job_id)
    except NotFound:
        return not_found(request, f"job #{job_id}")
    except ServiceError as exc:
        return error_page(request, exc.status_code, f"Cannot {action} job #{job_id}", str(exc.detail))
    return RedirectResponse(f"/jobs/{job_id}", status_code=303)


@router.post("/jobs/{job_id}/cancel", dependencies=[Depends(require_csrf)])
def cancel(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    return _act(request, job_id, caller, session, "cancel")


@router.post("/jobs/{job_id}/retry", dependencies=[Depends(require_csrf)])
def retry(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    return _act(request, job_id, caller, session, "retry")
