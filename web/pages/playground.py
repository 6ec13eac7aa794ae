"""A job's playground: a form (prompts, seeds, sampler settings, the checkpoint) that queues a playground job through
the API's own call, and the runs with their grids, base and trained side by side, polled while one is drawing."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session, get_settings
from server.config import Settings
from server.schemas.playground import PlaygroundRequest
from server.services.artifacts import list_artifacts
from server.services.auth import Caller
from server.services.errors import FieldErrors
from server.services.playground import playground_runs, request_playground
from server.services.task_jobs import CHECKPOINT_KINDS
from server.states import JobStatus
from trainer.spec import spec_errors
from trainer.spec.algorithm import AlgorithmSpec
from web.pages.account import form_fields
from web.pages.deps import page_caller, require_csrf, visible_page_job
from web.pages.page_write import form_write
from web.pages.render import render

if TYPE_CHECKING:
    from server.services.pages import Job

router = APIRouter()
FORM_FIELDS = tuple(PlaygroundRequest.model_fields)
DRAWING = (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.RUNNING)


def playground_request(form: dict[str, str]) -> PlaygroundRequest:
    """The form as the API's request body: prompts one per line, seeds separated by commas or spaces, an empty
    field left out; a schema error as FieldErrors naming the field, as the API's 422 does."""
    body: dict[str, Any] = {name: form[name].strip() for name in FORM_FIELDS if form.get(name, "").strip()}
    if "prompts" in body:
        body["prompts"] = [line.strip() for line in body["prompts"].splitlines() if line.strip()]
    if "seeds" in body:
        body["seeds"] = [seed for seed in re.split(r"[\s,]+", body["seeds"]) if seed]
    try:
        return PlaygroundRequest.model_validate(body)
    except ValidationError as exc:
        raise FieldErrors([{**e, "field": e["field"].split(".")[0]} for e in spec_errors(exc)]) from None


def _runs_context(session: Session, job: Job) -> dict[str, Any]:
    runs = playground_runs(session, job).items
    return {"job": job, "runs": runs, "drawing": any(run.status in DRAWING for run in runs)}


def _page(
    request: Request,
    session: Session,
    caller: Caller,
    job: Job,
    *,
    values: dict[str, str] | None = None,
    errors: list[dict[str, str]] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    placed: dict[str, list[str]] = {}
    for error in errors or []:
        if error["field"] in FORM_FIELDS:
            placed.setdefault(error["field"], []).append(error["message"])
    artifacts = list_artifacts(session, job.id).items
    steps = sorted({a.step for a in artifacts if a.kind in CHECKPOINT_KINDS and a.step is not None})
    algorithm = AlgorithmSpec.model_validate(job.spec.get("algorithm") or {})
    context = {
        "section": "jobs",
        **_runs_context(session, job),
        "form": {
            "shown": caller.can_write,
            "typed": values or {"seeds": "0"},
            "placed": placed,
            "unplaced": [e for e in errors or [] if e["field"] not in FORM_FIELDS],
            "steps": steps,
            "defaults": {
                "steps": algorithm.sampling_steps,
                "guidance_scale": algorithm.cfg_scale,
                "shift": algorithm.shift,
            },
        },
    }
    return render(request, "playground.html", context, status_code=status_code)


@router.get("/jobs/{job_id}/playground", response_class=HTMLResponse)
def playground_page(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    return _page(request, session, caller, visible_page_job(session, caller, job_id))


@router.get("/jobs/{job_id}/playground/runs", response_class=HTMLResponse)
def playground_runs_part(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    """The runs alone: what the page polls while one is queued or drawing."""
    job = visible_page_job(session, caller, job_id)
    return render(request, "partials/playground_runs.html", _runs_context(session, job))


@router.post("/jobs/{job_id}/playground", dependencies=[Depends(require_csrf)])
async def playground_from_form(
    request: Request,
    job_id: JobId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """Queue the run and show the page with it; on any error the form again, its messages by their fields."""
    job = visible_page_job(session, caller, job_id)
    form = await form_fields(request)

    def write() -> str:
        run = request_playground(session, caller, settings, job, playground_request(form))
        return f"/jobs/{job.id}/playground#run-{run.id}"

    target, errors = form_write(caller, write)
    if target:
        return RedirectResponse(target, status_code=303)
    return _page(request, session, caller, job, values=form, errors=errors, status_code=422)
