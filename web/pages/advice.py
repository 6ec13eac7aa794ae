"""The executor advisor's pages: "Advise" from the submit form or a job's page, the answer (services.advice) as a
table beside a chart of predicted memory against K, and "Submit with this executor"."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import get_session, get_settings
from server.config import Settings
from server.schemas.advice import AdviseRequest
from server.services import advice
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound, ServiceError
from web.pages.deps import page_caller, require_csrf
from web.pages.render import error_page, not_found, render
from web.pages.spec_form import form_to_spec
from web.pages.submit import submit_form_page

router = APIRouter()
AdviceId = Path(ge=1, le=2**31 - 1)


def _spec_from_form(form: dict[str, str]) -> tuple[Any, str, list[dict[str, str]]]:
    """The spec as the submit form sends it (its JSON editor or its fields): (data, its JSON, errors)."""
    if form.get("mode") == "json":
        try:
            return json.loads(form.get("spec_json", "")), form.get("spec_json", ""), []
        except json.JSONDecodeError as exc:
            return None, form.get("spec_json", ""), [{"field": "", "message": f"malformed JSON: {exc}"}]
    data = form_to_spec(form)
    return data, json.dumps(data, indent=2), []


@router.post("/advise", dependencies=[Depends(require_csrf)])
async def advise_page(
    request: Request,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """Queue the probe and go to the advice's page; any error shows the submit form again with its message."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    data, spec_json, errors = _spec_from_form(form)
    if not errors and not caller.can_write:
        errors = [{"field": "", "message": "this session is read-only (logged in with a read token)"}]
    if not errors:
        body = AdviseRequest(
            spec=data if isinstance(data, dict) else {}, memory_budget=form.get("memory_budget") or None
        )
        try:
            created = advice.request_advice(session, caller, body, settings, form.get("team") or None)
            return RedirectResponse(f"/advice/{created.id}", status_code=303)
        except FieldErrors as exc:
            errors = list(exc.detail)
        except ServiceError as exc:
            errors = [{"field": "", "message": str(exc.detail)}]
    mode = "json" if form.get("mode") == "json" else "form"
    return submit_form_page(
        request, caller, mode=mode, values=form, spec_json=spec_json, errors=errors, team=form.get("team", ""),
        status_code=422, refused="Nothing was probed",
    )  # fmt: skip


def _context(session: Session, caller: Caller, advice_id: int) -> dict[str, Any]:
    found = advice.advice_detail(session, caller, advice_id)
    rows = found.answer.executors if found.answer else []
    chart = {
        "budget": found.budget_bytes,
        "series": [{"executor": r.executor, "bytes": r.memory_by_trained} for r in rows if r.memory_by_trained],
    }
    return {"advice": found, "rows": rows, "chart": chart, "section": "submit"}


@router.get("/advice/{advice_id}", response_class=HTMLResponse)
def advice_page(
    request: Request,
    advice_id: int = AdviceId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    try:
        return render(request, "advice.html", _context(session, caller, advice_id))
    except NotFound:
        return not_found(request, f"advice #{advice_id}")


@router.get("/advice/{advice_id}/body", response_class=HTMLResponse)
def advice_body(
    request: Request,
    advice_id: int = AdviceId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The answer alone, polled while the probe runs."""
    try:
        return render(request, "partials/advice_body.html", _context(session, caller, advice_id))
    except NotFound:
        return not_found(request, f"advice #{advice_id}")


@router.post("/advice/{advice_id}/submit", dependencies=[Depends(require_csrf)])
async def submit_from_advice_page(
    request: Request,
    advice_id: int = AdviceId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    form = await request.form()
    executor = str(form.get("executor", ""))
    if not caller.can_write:
        return error_page(request, 403, "Read-only session", "You logged in with a read-only token.")
    try:
        job = advice.submit_from_advice(session, caller, advice_id, executor, settings)
    except NotFound:
        return not_found(request, f"advice #{advice_id}")
    except FieldErrors as exc:
        message = "; ".join(f"{e['field']}: {e['message']}" for e in exc.detail)
        return error_page(request, 422, "Not submitted", message)
    except ServiceError as exc:
        return error_page(request, exc.status_code, "Not submitted", str(exc.detail))
    return RedirectResponse(f"/jobs/{job.id}", status_code=303)
