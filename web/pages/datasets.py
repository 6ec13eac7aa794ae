"""The prompt sets' pages: the datasets of the caller's teams with the upload form, and one dataset with its
versions and a preview of a version's first rows (an edit set's with thumbnails of their images, read from the
API's image route with the page session). The upload form posts to the service the API uses
(server.services.dataset_uploads), so its refusals are the API's, shown beside the form. POSTs check CSRF."""

from __future__ import annotations

from typing import Annotated, Any
from urllib.parse import quote, urlencode

from fastapi import APIRouter, Depends, Path, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile

from server.api.deps import get_session
from server.config import Settings
from server.services import dataset_reads
from server.services.auth import Caller
from server.services.dataset_uploads import DatasetUpload, UploadedFile, create_version
from server.services.errors import FieldErrors, NotFound
from server.services.scoping import SUBMIT_ROLES
from trainer.spec.dataset_format import DATASET_FORMATS
from web.pages.deps import PageNotFound, page_caller, require_csrf
from web.pages.page_write import form_write
from web.pages.render import render

router = APIRouter()
DatasetNamePath = Annotated[str, Path(min_length=1, max_length=200)]
TeamQuery = Annotated[str | None, Query(max_length=100)]
FORM_FIELDS = ("name", "format", "train", "test", "images", "team")


def dataset_page_url(name: str, team: str) -> str:
    return f"/datasets/{quote(name, safe='')}?{urlencode({'team': team})}"


def _page(
    request: Request,
    session: Session,
    caller: Caller,
    *,
    values: dict[str, str] | None = None,
    errors: list[dict[str, str]] | None = None,
    status_code: int = 200,
) -> HTMLResponse:
    teams = [t.team_name for t in caller.teams if t.role in SUBMIT_ROLES]
    context: dict[str, Any] = {
        "section": "datasets",
        "datasets": dataset_reads.list_datasets(session, caller).items,
        "form": {
            "shown": (caller.can_write and bool(teams)) or bool(errors),
            "typed": values or {"format": "text"},
            "invalid": {e["field"] for e in errors or []},
            "errors": errors or [],
            "formats": DATASET_FORMATS,
            "teams": teams,
            "choose_team": len(teams) > 1,
        },
    }
    return render(request, "datasets.html", context, status_code=status_code)


@router.get("/datasets", response_class=HTMLResponse)
def datasets_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    return _page(request, session, caller)


@router.post("/datasets", dependencies=[Depends(require_csrf)])
async def upload_from_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> Response:
    """The upload form (name, format, train, test, images, team): the next version, then the dataset's page; a
    refusal is the form again with the API's messages."""
    settings: Settings = request.app.state.settings
    form = await request.form()
    values = {k: v for k, v in form.items() if isinstance(v, str) and k != "csrf_token"}

    def chosen(field: str) -> UploadedFile | None:
        value = form.get(field)
        has_file = isinstance(value, UploadFile) and bool(value.filename)
        return UploadedFile(value.filename or field, value.file) if has_file else None  # type: ignore[union-attr]

    images = [
        UploadedFile(v.filename, v.file) for v in form.getlist("images") if isinstance(v, UploadFile) and v.filename
    ]
    upload = DatasetUpload(
        name=values.get("name", "").strip(),
        format=values.get("format", ""),
        train=chosen("train"),
        test=chosen("test"),
        images=images,
    )
    team = values.get("team") or None

    def write() -> str:
        version = create_version(session, settings, caller, team, upload)
        return dataset_page_url(version.dataset, version.team)

    target, errors = await run_in_threadpool(form_write, caller, write)
    if target:
        return RedirectResponse(target, status_code=303)
    return _page(request, session, caller, values=values, errors=errors, status_code=422)


@router.get("/datasets/{dataset_name}", response_class=HTMLResponse)
def dataset_page(
    request: Request,
    dataset_name: DatasetNamePath,
    team: TeamQuery = None,
    version: Annotated[int | None, Query(ge=1, le=2**31 - 1)] = None,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The dataset's versions, and the preview of `version` (default the latest)."""
    try:
        dataset = dataset_reads.dataset_detail(session, caller, dataset_name, team)
        shown = version or dataset.latest_version
        preview = dataset_reads.preview(session, caller, dataset_name, shown, team) if shown else None
    except (NotFound, FieldErrors):
        raise PageNotFound(f"dataset {dataset_name!r}") from None
    context = {
        "section": "datasets",
        "dataset": dataset,
        "preview": preview,
        "team_query": urlencode({"team": dataset.team}),
    }
    return render(request, "dataset.html", context)
