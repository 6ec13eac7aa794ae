"""The executor advisor's pages: "Advise" from the submit form or a job's page, the answer (services.advice) as a
table beside a chart of predicted memory against K, and "Submit with this executor"."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import get_session, get_settings
from server.config import Settings
from server.schemas.advice import AdviseRequest
from server.services import advice
from server.services.auth import Caller
from server.services.errors import NotFound
from web.pages.deps import page_caller, require_csrf
from web.pages.page_write import form_write, page_write
from web.pages.render import not_found, render
from web.pages.spec_form import spec_from_form
from web.pages.submit import submit_form_page

router = APIRouter()
AdviceId = Path(ge=1, le=2**31 - 1)


@router.post("/advise", dependencies=[Depends(require_csrf)])
async def advise_page(
    request: Request,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """Queue the probe and go to the advice's page; any error shows the submit form again with its message."""
    form = {k: v for k, v in (await request.form()).items() if isinstance(v, str)}
    data, spec_json, errors = spec_from_form(form)

    def write() -> str:
        spec = data if isinstance(data, dict) else {}
        body = AdviseRequest(spec=spec, memory_budget=form.get("memory_budget") or None)
        return f"/advice/{advice.request_advice(session, caller, body, settings, form.get('team') or None).id}"

    if not errors:
        target, errors = form_write(caller, write)
        if target:
            return RedirectResponse(target, status_code=303)
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


def _render(request: Request, template: str, session: Session, caller: Caller, advice_id: int) -> HTMLResponse:
    """The page or its polled answer; a missing or hidden advice is the 404 page."""
    try:
        return render(request, template, _context(session, caller, advice_id))
    except NotFound:
        return not_found(request, f"advice #{advice_id}")


@router.get("/advice/{advice_id}", response_class=HTMLResponse)
def advice_page(
    request: Request,
    advice_id: int = AdviceId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    return _render(request, "advice.html", session, caller, advice_id)


@router.get("/advice/{advice_id}/body", response_class=HTMLResponse)
def advice_body(
    request: Request,
    advice_id: int = AdviceId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> HTMLResponse:
    """The answer alone, polled while the probe runs."""
    return _render(request, "partials/advice_body.html", session, caller, advice_id)


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

    def write() -> str:
        return f"/jobs/{advice.submit_from_advice(session, caller, advice_id, executor, settings).id}"

    return page_write(request, caller, f"advice #{advice_id}", "Not submitted", write)
