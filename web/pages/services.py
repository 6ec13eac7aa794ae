"""Reward services: each one's host and devices, request rate, latency p50/p99, errors and the jobs using it,
as services.reward_services answers the API (one definition of every figure). A "New service" form and a Stop
button per service write through the API's own calls (create_service, stop_service), so the page refuses what
the API refuses, with the same messages, each beside the field it names."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import ServiceId, get_session, get_settings
from server.config import Settings
from server.schemas.services import ServiceCreate
from server.services.auth import Caller
from server.services.errors import FieldErrors, ServiceError
from server.services.reward_services import (
    create_service,
    list_services,
    servable_rewards,
    stop_service,
    stoppable_ids,
    weightless_reward,
)
from server.services.scoping import SUBMIT_ROLES
from server.services.service_devices import UNREGISTERED_DEFAULT, default_device_type, host_offer
from trainer.spec import MODEL_REWARDS, spec_errors
from web.pages.account import form_fields
from web.pages.deps import page_caller, require_csrf
from web.pages.page_write import form_write
from web.pages.render import render

router = APIRouter()
PAGE_SIZE = 100
# The form's fields: ServiceCreate's. An error naming another (or none) is shown above them.
FORM_FIELDS = tuple(ServiceCreate.model_fields)


def _body_context(session: Session, caller: Caller, refusal: str = "") -> dict[str, Any]:
    """The table: the newest services, which of them the caller may stop, and why a stop was refused."""
    page = list_services(session, caller, limit=PAGE_SIZE)
    stoppable = stoppable_ids(session, caller, [s.id for s in page.items])
    return {"services": page.items, "total": page.total, "stoppable": stoppable, "refusal": refusal}


def _page(
    request: Request,
    session: Session,
    caller: Caller,
    *,
    values: dict[str, str] | None = None,
    errors: list[dict[str, str]] | None = None,
    refusal: str = "",
    status_code: int = 200,
) -> HTMLResponse:
    placed: dict[str, list[str]] = {}
    for error in errors or []:
        if error["field"] in FORM_FIELDS:
            placed.setdefault(error["field"], []).append(error["message"])
    teams = [t.team_name for t in caller.teams if t.role in SUBMIT_ROLES]
    context = {
        "section": "services",
        **_body_context(session, caller, refusal),
        "form": {
            "shown": (caller.can_write and bool(teams)) or bool(errors),  # a refused crafted post says why
            "open": bool(errors),
            "typed": values or _new_service(session),
            "placed": placed,
            "unplaced": [e for e in errors or [] if e["field"] not in FORM_FIELDS],
            "rewards": servable_rewards(),
            "model_rewards": MODEL_REWARDS,
            "teams": teams,
            "choose_team": len(teams) > 1,
        },
    }
    return render(request, "services.html", context, status_code=status_code)


def _new_service(session: Session) -> dict[str, str]:
    """The panel's first values: what can run here, a reward that needs no weights on a device type that an
    online host offers (as the API chooses when the type is left out)."""
    device_type = default_device_type(host_offer(session), 1) or UNREGISTERED_DEFAULT
    return {"reward": weightless_reward(), "device_type": device_type, "devices": "1"}


def service_create(form: dict[str, str]) -> ServiceCreate:
    """The form as the API's request body (an empty field is left out); a schema error as FieldErrors naming the
    field, as the API's 422 does."""
    body = {name: form[name].strip() for name in FORM_FIELDS if form.get(name, "").strip()}
    try:
        return ServiceCreate.model_validate(body)
    except ValidationError as exc:
        raise FieldErrors(spec_errors(exc)) from None


@router.get("/services", response_class=HTMLResponse)
def services_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    return _page(request, session, caller)


@router.post("/services", dependencies=[Depends(require_csrf)])
async def create_service_from_form(
    request: Request,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
    settings: Settings = Depends(get_settings),
) -> Response:
    """Create the service and show the page with it; on any error the form again, open, its messages by their
    fields, nothing stored."""
    form = await form_fields(request)

    def write() -> str:
        service = create_service(session, caller, service_create(form), settings)
        return f"/services#service-{service.id}"

    target, errors = form_write(caller, write)
    if target:
        return RedirectResponse(target, status_code=303)
    return _page(request, session, caller, values=form, errors=errors, status_code=422)


@router.get("/services/body", response_class=HTMLResponse)
def services_body(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    """The services table alone, polled every 5 s."""
    return render(request, "partials/services_body.html", _body_context(session, caller))


@router.post("/services/{service_id}/stop", dependencies=[Depends(require_csrf)])
def stop_service_from_page(
    request: Request,
    service_id: ServiceId,
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    """Stop the service. From htmx, the table again (a refusal above it, with its status: 403, 404, 409); from a
    plain form post, the page (a 303 to it, or the page with the refusal)."""
    htmx = bool(request.headers.get("hx-request"))
    try:
        stop_service(session, caller, service_id)
    except ServiceError as exc:
        refusal = f"Service #{service_id} was not stopped: {exc.detail}"
        if htmx:
            context = _body_context(session, caller, refusal)
            return render(request, "partials/services_body.html", context, status_code=exc.status_code)
        return _page(request, session, caller, refusal=refusal, status_code=exc.status_code)
    if htmx:
        return render(request, "partials/services_body.html", _body_context(session, caller))
    return RedirectResponse(f"/services#service-{service_id}", status_code=303)
