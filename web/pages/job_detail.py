"""One job: header with cancel / retry / clone, live charts, logs with follow, the spec and the artifacts.

The charts draw what the API's GET /api/v1/jobs/{id}/metrics answers (web/static/charts.js), asked with the
page's session cookie: the same series, schema and limits as any other client."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session, get_settings
from server.config import Settings
from server.schemas.jobs import JobDetail
from server.services import pages
from server.services.advice import prediction_for_job
from server.services.artifacts import list_artifacts
from server.services.auth import Caller
from server.services.current_points import current_points
from server.services.errors import NotFound
from server.services.evaluation_reads import list_evaluations
from server.services.exports import list_exports
from server.services.hub_warning import hub_model_warning
from server.services.job_reads import job_detail
from server.services.jobs import cancel_job, retry_job
from server.services.logs import read_logs
from server.services.metric_reads import MAX_KEYS_PER_READ, latest_points
from server.services.reward_hacking import recorded_alarm
from server.states import TERMINAL_STATES
from web.pages.deps import PageNotFound, page_caller, require_csrf, run_as_page_caller, visible_page_job
from web.pages.page_write import page_write
from web.pages.render import render

router = APIRouter()

# The job page's charts. keys: always asked; prefixes: every reported key starting with one; band: [centre,
# half-width] drawn as a shaded band; right: keys on a second y axis; stack: stacked areas; unit: axis format;
# source: read from that API route of the job instead of its metrics.
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
    # Not a metric: the mean reward of each eval step's samples (GET .../samples/eval-rewards).
    {"id": "eval", "title": "Eval reward", "keys": [], "source": "eval-rewards"},
    # Not a metric: each (prompt set, reward) of the evaluations of the job's checkpoints against their step.
    {"id": "checkpoint-evals", "title": "Eval reward by checkpoint", "keys": [], "source": "evaluations/curve"},
    {"id": "executor", "title": "Executor metrics", "keys": [], "prefixes": ["executor/"]},
]

# The reward-hacking banner's chart: the training reward and the held-out series (GET .../reward-hacking).
ALARM_CHART = {"id": "reward-hacking", "title": "Reward", "keys": [],
               "source": "reward-hacking"}  # fmt: skip


def _header_context(session: Session, job: JobDetail) -> dict[str, Any]:
    placement: dict[str, list[int]] = {}
    for alloc in job.allocations:
        placement.setdefault(alloc.host, []).append(alloc.device_index)
    live = job.status not in TERMINAL_STATES
    return {"job": job, "placement": placement, "live": live, "eval_steps": len(pages.sample_steps(session, job.id))}


@router.get("/jobs/{job_id}", response_class=HTMLResponse)
async def job_page(request: Request, job_id: JobId) -> HTMLResponse:
    return await run_as_page_caller(request, _job_page, request, job_id)


def _hub_warning(session: Session, job: JobDetail) -> str | None:
    """Until the job starts: whether its hub model could be downloaded by any worker that could run it."""
    if job.status != "queued":
        return None
    return hub_model_warning(session, str(job.spec.get("model", {}).get("path", "")), job.device_type)


def _job_page(session: Session, caller: Caller, request: Request, job_id: int) -> HTMLResponse:
    job = _visible_detail(session, caller, job_id)
    lines = pages.log_tail(session, job.id)
    current = current_points(session, job.id)
    context = _header_context(session, job)
    context.update(
        section="jobs",
        charts=CHARTS,
        max_keys=MAX_KEYS_PER_READ,
        latest=latest_points(session, job.id, current=current),
        logs=lines,
        last_log_id=lines[-1].id if lines else 0,
        artifacts=list_artifacts(session, job.id).items,
        exports=list_exports(session, job.id),
        has_samples=pages.has_current_samples(session, job.id, current),
        hub_warning=_hub_warning(session, job),
        prediction=prediction_for_job(session, caller, job.id),
        alarm=recorded_alarm(session, job.id),
        alarm_chart=ALARM_CHART,
        evaluations=list_evaluations(session, job.id).items,
    )
    return render(request, "job.html", context)


@router.get("/jobs/{job_id}/header", response_class=HTMLResponse)
async def job_header(request: Request, job_id: JobId) -> HTMLResponse:
    """The header alone, asked again each time the charts have polled (so progress, gallery and charts move
    together) while the job is active; the poll stops once it has finished."""
    return await run_as_page_caller(request, _job_header, request, job_id)


def _job_header(session: Session, caller: Caller, request: Request, job_id: int) -> HTMLResponse:
    context = _header_context(session, _visible_detail(session, caller, job_id))
    return render(request, "partials/job_header.html", context)


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
    # Only the first lines of a page that had none remove its placeholder (later ones would find no target).
    context = {"job": job, "logs": page.lines, "last_log_id": page.next_offset, "live": live, "fragment": True,
               "first_lines": after == 0}  # fmt: skip
    return render(request, "partials/log_lines.html", context)


def _act(request: Request, job_id: int, caller: Caller, action: str, change: Callable[[], object]) -> Response:
    def write() -> str:
        change()
        return f"/jobs/{job_id}"

    return page_write(request, caller, f"job #{job_id}", f"Cannot {action} job #{job_id}", write)


@router.post("/jobs/{job_id}/cancel", dependencies=[Depends(require_csrf)])
def cancel(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    return _act(request, job_id, caller, "cancel", lambda: cancel_job(session, caller, job_id))


@router.post("/jobs/{job_id}/retry", dependencies=[Depends(require_csrf)])
def retry(
    request: Request,
    job_id: JobId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    return _act(request, job_id, caller, "retry", lambda: retry_job(session, caller, job_id, settings))
