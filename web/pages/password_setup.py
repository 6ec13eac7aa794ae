"""The one-time setup link's page: a user without a password (the first admin) chooses one, and is logged in
with it (server.services.password_setup). The link's code is in the URL, so the page is neither cached nor
sent on as a referrer."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.api.page_session import new_session, read_session, write_cookie
from server.services.errors import FieldErrors, ServiceError
from server.services.password_setup import SETUP_PATH, redeem_setup_link, setup_link_user
from web.pages.deps import require_csrf
from web.pages.render import error_page, render

router = APIRouter()
_PRIVATE = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}


def _secret_key(request: Request) -> str:
    return str(request.app.state.settings.secret_key)


def _private(response: Response) -> Response:
    response.headers.update(_PRIVATE)
    return response


@router.get(SETUP_PATH, response_class=HTMLResponse)
def setup_page(request: Request, code: str = "", session: Session = Depends(get_session)) -> Response:
    read_session(request)
    try:
        user = setup_link_user(session, _secret_key(request), code)
    except ServiceError as exc:
        return _private(error_page(request, exc.status_code, "Setup link not valid", str(exc.detail)))
    return _private(render(request, "password_setup.html", {"code": code, "username": user.username}))


@router.post(SETUP_PATH, dependencies=[Depends(require_csrf)])
def set_first_password(
    request: Request,
    code: str = Form(""),
    new_password: str = Form(""),
    session: Session = Depends(get_session),
) -> Response:
    """The first password, then a fresh session opened by it (and a fresh CSRF token)."""
    read_session(request)
    key = _secret_key(request)
    try:
        username = setup_link_user(session, key, code).username
        user = redeem_setup_link(session, key, code, new_password)
    except FieldErrors as exc:
        context = {"code": code, "username": username, "errors": [e["message"] for e in exc.detail]}
        return _private(render(request, "password_setup.html", context, status_code=exc.status_code))
    except ServiceError as exc:
        return _private(error_page(request, exc.status_code, "Setup link not valid", str(exc.detail)))
    response = RedirectResponse("/settings", status_code=303)
    write_cookie(request, response, new_session(user.id, generation=user.session_generation))
    return _private(response)
