"""Login with a username and password or an API token; logout."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.services.auth import authenticate_api_token
from server.services.errors import Unauthorized
from server.services.pages import user_for_password
from web.pages.deps import require_csrf
from web.pages.render import render
from web.pages.session import new_session, read_session, write_cookie

router = APIRouter()


def safe_next(target: str | None) -> str:
    """Only same-site paths; anything else goes to the jobs page."""
    if target and target.startswith("/") and not target.startswith(("//", "/\\")):
        return target
    return "/jobs"


@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/jobs") -> HTMLResponse:
    read_session(request)
    return render(request, "login.html", {"next": safe_next(next)})


@router.post("/login", dependencies=[Depends(require_csrf)])
def login(
    request: Request,
    username: str = Form(""),
    password: str = Form(""),
    token: str = Form(""),
    next: str = Form("/jobs"),
    session: Session = Depends(get_session),
) -> Response:
    """Credentials → a fresh session (and a fresh CSRF token); wrong ones re-show the form with 401."""
    read_session(request)
    fresh = None
    if token.strip():
        try:
            caller = authenticate_api_token(session, token.strip())
            fresh = new_session(caller.user_id, can_write=caller.can_write)
        except Unauthorized:
            fresh = None
    elif username.strip():
        user = user_for_password(session, username, password)
        fresh = new_session(user.id) if user else None
    if fresh is None:
        error = "Wrong API token." if token.strip() else "Wrong username or password."
        context = {"next": safe_next(next), "error": error, "username": username}
        return render(request, "login.html", context, status_code=401)
    response = RedirectResponse(safe_next(next), status_code=303)
    write_cookie(request, response, fresh)
    return response


@router.post("/logout", dependencies=[Depends(require_csrf)])
def logout(request: Request) -> Response:
    response = RedirectResponse("/login", status_code=303)
    write_cookie(request, response, new_session())
    return response
