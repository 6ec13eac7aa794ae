"""The playground pages, of a job (any of its checkpoints) and of a model version (its checkpoint): a form (prompts,
seeds, sampler settings, the job's checkpoint) that queues a playground job through the API's own call, and the runs
with their grids, base and trained side by side, polled while one is drawing."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session, get_settings
from server.config import Settings
from server.schemas.common import MAX_INT32
from server.schemas.playground import PlaygroundList, PlaygroundRequest
from server.services.artifacts import list_artifacts
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound
from server.services.playground import (
    VersionCheckpoint,
    checkpoint_playground_runs,
    playground_runs,
    request_playground,
    request_version_playground,
    version_checkpoint,
)
from server.services.task_jobs import CHECKPOINT_KINDS
from server.states import JobStatus
from trainer.spec import spec_errors
from trainer.spec.algorithm import AlgorithmSpec
from trainer.spec.playground_task import PlaygroundSettings
from web.pages.account import form_fields
from web.pages.deps import PageNotFound, page_caller, require_csrf, visible_page_job
from web.pages.models import ModelNamePath, TeamQuery
from web.pages.page_write import form_write
from web.pages.render import render

if TYPE_CHECKING:
    from server.services.pages import Job

router = APIRouter()
VersionPath = Annotated[int, Path(ge=1, le=MAX_INT32)]
FORM_FIELDS = tuple(PlaygroundRequest.model_fields)
DRAWING = (JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.RUNNING)


def playground_request(
    form: dict[str, str], schema: type[PlaygroundSettings] = PlaygroundRequest
) -> PlaygroundSettings:
    """The form as the API's request body: prompts one per line, seeds separated by commas or spaces, an empty
    field left out; a schema error as FieldErrors naming the field, as the API's 422 does."""
    body: dict[str, Any] = {name: form[name].strip() for name in schema.model_fields if form.get(name, "").strip()}
    if "prompts" in body:
        body["prompts"] = [line.strip() for line in body["prompts"].splitlines() if line.strip()]
    if "seeds" in body:
        body["seeds"] = [seed for seed in re.split(r"[\s,]+", body["seeds"]) if seed]
    try:
        return schema.model_validate(body)
    except ValidationError as exc:
        raise FieldErrors([{**e, "field": e["field"].split(".")[0]} for e in spec_errors(exc)]) from None


@dataclass(frozen=True)
class Subject:
    """What a playground page draws with: a job, on the checkpoint the form picks, or a model version, on its own."""

    job: Job
    url: str  # the page's; the runs partial is url + "/runs", with the query after it
    query: str
    title: str
    crumbs: list[tuple[str, str]]
    version: VersionCheckpoint | None = None

    @property
    def runs_url(self) -> str:
        return f"{self.url}/runs{self.query}"

    def runs(self, session: Session) -> PlaygroundList:
        if self.version is not None:
            return checkpoint_playground_runs(session, self.version.artifact.id)
        return playground_runs(session, self.job)


def job_subject(session: Session, caller: Caller, job_id: int) -> Subject:
    job = visible_page_job(session, caller, job_id)
    crumbs = [("/jobs", "Jobs"), (f"/jobs/{job.id}", job.name)]
    return Subject(job, f"/jobs/{job.id}/playground", "", job.name, crumbs)


def version_subject(session: Session, caller: Caller, name: str, number: int, team: str | None) -> Subject:
    try:
        version = version_checkpoint(session, caller, name, number, team)
    except (NotFound, FieldErrors):
        raise PageNotFound(f"version {number} of model {name!r}") from None
    model_url = f"/models/{quote(name, safe='')}"
    query = "?" + urlencode({"team": version.team})
    crumbs = [
        ("/models", "Models"),
        (model_url + query, name),
        (f"{model_url}{query}#version-{number}", f"version {number}"),
    ]
    url = f"{model_url}/versions/{number}/playground"
    return Subject(version.job, url, query, f"{name} version {number}", crumbs, version)


def _runs_context(session: Session, subject: Subject) -> dict[str, Any]:
    runs = subject.runs(session).items
    return {"subject": subject, "job": subject.job, "runs": runs, "drawing": any(r.status in DRAWING for r in runs)}


def _page(
    request: Request,
    session: Session,
    caller: Caller,
    subject: Subject,
    *,
    values: dict[str, str] | None = None,
    errors: list[dict[str, str]] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    placed: dict[str, list[str]] = {}
    for error in errors or []:
        if error["field"] in FORM_FIELDS:
            placed.setdefault(error["field"], []).append(error["message"])
    steps = None
    if subject.version is None:
        artifacts = list_artifacts(session, subject.job.id).items
        steps = sorted({a.step for a in artifacts if a.kind in CHECKPOINT_KINDS and a.step is not None})
    algorithm = AlgorithmSpec.model_validate(subject.job.spec.get("algorithm") or {})
    context = {
        "section": "jobs" if subject.version is None else "models",
        **_runs_context(session, subject),
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


async def _draw(request: Request, session: Session, caller: Caller, settings: Settings, subject: Subject) -> Response:
    """Queue the run and show the page with it; on any error the form again, its messages by their fields."""
    form = await form_fields(request)

    def write() -> str:
        if subject.version is None:
            run = request_playground(session, caller, settings, subject.job, playground_request(form))
        else:
            body = playground_request(form, PlaygroundSettings)
            run = request_version_playground(session, caller, settings, subject.version, body)
        return f"{subject.url}{subject.query}#run-{run.id}"

    target, errors = form_write(caller, write)
    if target:
        return RedirectResponse(target, status_code=303)
    return _page(request, session, caller, subject, values=form, errors=errors, status_code=422)


@router.get("/jobs/{job_id}/playground", response_class=HTMLResponse)
def playground_page(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    return _page(request, session, caller, job_subject(session, caller, job_id))


@router.get("/jobs/{job_id}/playground/runs", response_class=HTMLResponse)
def playground_runs_part(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    """The runs alone: what the page polls while one is queued or drawing."""
    subject = job_subject(session, caller, job_id)
    return render(request, "partials/playground_runs.html", _runs_context(session, subject))


@router.post("/jobs/{job_id}/playground", dependencies=[Depends(require_csrf)])
async def playground_from_form(
    request: Request,
    job_id: JobId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    return await _draw(request, session, caller, settings, job_subject(session, caller, job_id))


@router.get("/models/{model_name}/versions/{version}/playground", response_class=HTMLResponse)
def version_playground_page(
    request: Request,
    model_name: ModelNamePath,
    version: VersionPath,
    team: TeamQuery = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    return _page(request, session, caller, version_subject(session, caller, model_name, version, team))


@router.get("/models/{model_name}/versions/{version}/playground/runs", response_class=HTMLResponse)
def version_playground_runs_part(
    request: Request,
    model_name: ModelNamePath,
    version: VersionPath,
    team: TeamQuery = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    subject = version_subject(session, caller, model_name, version, team)
    return render(request, "partials/playground_runs.html", _runs_context(session, subject))


@router.post("/models/{model_name}/versions/{version}/playground", dependencies=[Depends(require_csrf)])
async def version_playground_from_form(
    request: Request,
    model_name: ModelNamePath,
    version: VersionPath,
    team: TeamQuery = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    subject = version_subject(session, caller, model_name, version, team)
    return await _draw(request, session, caller, settings, subject)
