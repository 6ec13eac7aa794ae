"""The model registry's pages: the models of the caller's teams, and one model with its aliases (moved with a
form) and its versions' lineage; the job page's "Register as model" form posts here. The services
(server.services.model_registry) decide who may do what; these pages show their answers. Every POST checks CSRF."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session
from server.schemas.model_registry import ModelRegister
from server.services import model_registry
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound
from server.services.evaluation_reads import version_evaluations
from server.services.scoping import SUBMIT_ROLES, get_visible_job
from trainer.spec import spec_errors
from web.pages.account import form_fields
from web.pages.deps import PageNotFound, page_caller, require_csrf
from web.pages.page_write import page_write
from web.pages.render import render

router = APIRouter()
ModelNamePath = Annotated[str, Path(min_length=1, max_length=200)]
TeamQuery = Annotated[str | None, Query(max_length=100)]


def model_page_url(name: str, team: str) -> str:
    return f"/models/{quote(name, safe='')}?{urlencode({'team': team})}"


@router.get("/models", response_class=HTMLResponse)
def models_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    context = {"section": "models", "models": model_registry.list_models(session, caller).items}
    return render(request, "models.html", context)


@router.get("/models/{model_name}", response_class=HTMLResponse)
def model_page(
    request: Request,
    model_name: ModelNamePath,
    team: TeamQuery = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    try:
        model = model_registry.model_detail(session, caller, model_name, team)
    except (NotFound, FieldErrors):
        raise PageNotFound(f"model {model_name!r}") from None
    role = next((t.role for t in caller.teams if t.team_name == model.team), None)
    context: dict[str, Any] = {
        "section": "models",
        "model": model,
        "can_move": caller.can_write and (caller.is_admin or role in SUBMIT_ROLES),
        "download_url": model_registry.artifact_download_url,
        "version_evaluations": {
            v.version: version_evaluations(session, v.artifact_id).items for v in model.versions if v.artifact_id
        },
    }
    return render(request, "model.html", context)


@router.post("/models/{model_name}/aliases", dependencies=[Depends(require_csrf)])
async def move_alias(
    request: Request,
    model_name: ModelNamePath,
    team: TeamQuery = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    """Set or move an alias (form: alias, version), then back to the model's page."""
    form = await form_fields(request)

    def write() -> str:
        version = form.get("version", "")
        if not version.isdigit():
            raise FieldErrors.one("version", f"{version!r} is not a version number")
        moved_team = team or model_registry.visible_model(session, caller, model_name)[1].name
        model_registry.set_alias(session, caller, model_name, form.get("alias", ""), int(version), team)
        return model_page_url(model_name, moved_team)

    return page_write(request, caller, f"model {model_name!r}", "Alias not moved", write)


@router.post("/jobs/{job_id}/register-model", dependencies=[Depends(require_csrf)])
async def register_model(
    request: Request, job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    """The job page's "Register as model" form (name, step): the checkpoint as the model's next version, then the
    model's page."""
    form = await form_fields(request)

    def write() -> str:
        get_visible_job(session, caller, job_id)  # another team's job: the 404 page, as for a missing one
        try:
            body = ModelRegister.model_validate({"job_id": job_id, "name": form.get("name", ""),
                                                 "step": form.get("step") or None})  # fmt: skip
        except ValidationError as exc:
            raise FieldErrors(spec_errors(exc)) from None
        version = model_registry.register_version(session, caller, body)
        return model_page_url(version.model, version.team)

    return page_write(request, caller, f"job #{job_id}", "Model not registered", write)
