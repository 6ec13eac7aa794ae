"""Login with a username and password or an API token (at most 5 attempts a minute per name and address, 20 per
address: 429; see server.services.rate_limit); logout."""

from __future__ import annotations

from fastapi import APIRouter, Depends, Form, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.api.page_session import PageSession, new_session, read_session, write_cookie
from server.services.auth import authenticate_api_token, authenticate_password
from server.services.errors import TooManyRequests, Unauthorized
from server.services.page_sessions import end_page_sessions, session_generation
from server.services.password_pool import HashingBusy
from server.services.rate_limit import count_login_attempt, login_succeeded, record_login_failure
from web.pages.deps import require_csrf
from web.pages.render import render

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
    ip = request.client.host if request.client else None
    name = "" if token.strip() else username  # attempts are counted per username, token logins under one name
    try:
        attempt = count_login_attempt(session, name, ip)
        fresh = _check_credentials(session, username, password, token)
    except (TooManyRequests, HashingBusy) as exc:
        context = {"next": safe_next(next), "error": exc.detail, "username": username}
        refused = render(request, "login.html", context, status_code=exc.status_code)
        refused.headers["Retry-After"] = str(exc.retry_after)
        return refused
    if fresh is None:
        record_login_failure(session, name, ip)
        error = "Wrong API token." if token.strip() else "Wrong username or password."
        context = {"next": safe_next(next), "error": error, "username": username}
        return render(request, "login.html", context, status_code=401)
    login_succeeded(session, attempt)
    response = RedirectResponse(safe_next(next), status_code=303)
    write_cookie(request, response, fresh)
    return response


def _check_credentials(session: Session, username: str, password: str, token: str) -> PageSession | None:
    """The new session the token or the password opens, or None."""
    fresh = None
    if token.strip():
        try:
            caller = authenticate_api_token(session, token.strip())
            generation = session_generation(session, caller.user_id)
            fresh = new_session(
                caller.user_id,
                can_write=caller.can_write,
                generation=generation,
                token_id=caller.token_id,
                expires_at=caller.token_expires_at,
            )
        except Unauthorized:
            fresh = None
    elif username.strip():
        user = authenticate_password(session, username, password)
        fresh = new_session(user.id, generation=user.session_generation) if user else None
    return fresh


@router.post("/logout", dependencies=[Depends(require_csrf)])
def logout(request: Request, session: Session = Depends(get_session)) -> Response:
    """End this session and every other page session of the user (their cookies stop being accepted)."""
    ps = read_session(request)
    if ps.user_id is not None:
        end_page_sessions(session, ps.user_id, ps.generation)
    response = RedirectResponse("/login", status_code=303)
    write_cookie(request, response, new_session())
    return response
