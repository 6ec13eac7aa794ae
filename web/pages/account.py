"""The caller's settings: API tokens (create, shown once; list; revoke) and password. Every POST checks CSRF."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.api.page_session import new_session
from server.schemas.accounts import PasswordChange, TokenCreate, TokenCreated
from server.schemas.common import MAX_INT32
from server.services import accounts
from server.services.auth import Caller
from server.services.errors import FieldErrors, ServiceError
from server.services.page_sessions import session_generation
from web.pages.deps import page_caller, require_csrf
from web.pages.render import render

router = APIRouter()


def messages(exc: ServiceError | ValidationError) -> list[str]:
    """A service or schema error as lines a form shows."""
    if isinstance(exc, ValidationError):
        return [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()]
    if isinstance(exc, FieldErrors):
        return [f"{e['field']}: {e['message']}" for e in exc.detail]
    return [str(exc.detail)]


async def form_fields(request: Request) -> dict[str, str]:
    return {k: v for k, v in (await request.form()).items() if isinstance(v, str) and k != "csrf_token"}


def _page(
    request: Request,
    session: Session,
    caller: Caller,
    *,
    created: TokenCreated | None = None,
    errors: list[str] | None = None,
    notice: str = "",
    status_code: int = 200,
) -> HTMLResponse:
    context: dict[str, Any] = {
        "section": "settings",
        "tokens": accounts.list_api_tokens(session, caller).items,
        "created": created,
        "errors": errors or [],
        "notice": notice,
        "can_write": caller.can_write,
    }
    return render(request, "settings.html", context, status_code=status_code)


@router.get("/settings", response_class=HTMLResponse)
def settings_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    return _page(request, session, caller)


@router.post("/settings/tokens", dependencies=[Depends(require_csrf)], response_class=HTMLResponse)
async def create_token(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    """Create a token and show its secret on this one page (never in a URL, never again)."""
    form = await form_fields(request)
    body = {"name": form.get("name", ""), "scope": form.get("scope", "write")}
    if form.get("expires_in_days", "").strip():
        body["expires_in_days"] = form["expires_in_days"].strip()
    try:
        created = accounts.create_api_token(session, caller, TokenCreate.model_validate(body))
    except (ServiceError, ValidationError) as exc:
        return _page(request, session, caller, errors=messages(exc), status_code=422)
    response = _page(request, session, caller, created=created)
    response.headers["Cache-Control"] = "no-store"
    return response


@router.post("/settings/tokens/{token_id}/revoke", dependencies=[Depends(require_csrf)])
def revoke_token(
    request: Request,
    token_id: Annotated[int, Path(ge=1, le=MAX_INT32)],
    caller: Caller = Depends(page_caller),
    session: Session = Depends(get_session),
) -> Response:
    try:
        accounts.revoke_api_token(session, caller, token_id)
    except ServiceError as exc:
        return _page(request, session, caller, errors=messages(exc), status_code=exc.status_code)
    return RedirectResponse("/settings", status_code=303)


@router.post("/settings/password", dependencies=[Depends(require_csrf)], response_class=HTMLResponse)
async def change_password(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    form = await form_fields(request)
    try:
        body = PasswordChange.model_validate({k: form.get(k, "") for k in ("current_password", "new_password")})
        accounts.change_password(session, caller, body)
    except (ServiceError, ValidationError) as exc:
        status_code = exc.status_code if isinstance(exc, ServiceError) else 422
        return _page(request, session, caller, errors=messages(exc), status_code=status_code)
    # Every other session of the user ended; this one continues under the new generation (and a new CSRF token).
    generation = session_generation(session, caller.user_id)
    request.state.page_session = new_session(
        caller.user_id,
        can_write=caller.can_write,
        generation=generation,
        token_id=caller.token_id,
        expires_at=caller.token_expires_at,
    )
    return _page(request, session, caller, notice="Password changed; your other sessions were logged out.")
