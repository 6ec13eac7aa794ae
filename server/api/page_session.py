"""The signed page-session cookie: who is logged in and the CSRF token of their forms.

The pages log in with it (web.pages.auth), and the API accepts it for reads (server.api.deps), so a page
draws its charts and images from the API's own handlers."""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from fastapi import Request, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy.orm import Session

from server.config import Settings
from server.services.auth import Caller, caller_for_user_id

COOKIE = "sfumato_session"
MAX_AGE = 7 * 24 * 3600
# Without a configured secret key, sessions last as long as this process.
_PROCESS_KEY = secrets.token_hex(32)


@dataclass
class PageSession:
    user_id: int | None
    csrf: str
    can_write: bool = True
    generation: int = 0
    changed: bool = False


def _settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def _serializer(settings: Settings) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(settings.secret_key or _PROCESS_KEY, salt="sfumato-page-session")


def new_session(user_id: int | None = None, *, can_write: bool = True, generation: int = 0) -> PageSession:
    """A fresh session (and CSRF token); `generation` is the user's session_generation at login."""
    csrf = secrets.token_urlsafe(32)
    return PageSession(user_id=user_id, csrf=csrf, can_write=can_write, generation=generation, changed=True)


def read_session(request: Request) -> PageSession:
    """The session of this request (cached on request.state); a fresh anonymous one when missing or forged."""
    cached = getattr(request.state, "page_session", None)
    if cached is not None:
        return cached
    raw = request.cookies.get(COOKIE)
    ps = None
    if raw:
        try:
            data = _serializer(_settings(request)).loads(raw, max_age=MAX_AGE)
            ps = PageSession(
                user_id=data.get("uid"),
                csrf=str(data["csrf"]),
                can_write=bool(data.get("w", True)),
                generation=int(data.get("g", 0)),
            )
        except (BadSignature, KeyError, TypeError, ValueError, AttributeError):
            ps = None
    ps = ps or new_session()
    request.state.page_session = ps
    return ps


def write_cookie(request: Request, response: Response, ps: PageSession) -> None:
    """Set the cookie when the session is new or changed (login, logout)."""
    if not ps.changed:
        return
    settings = _settings(request)
    value = _serializer(settings).dumps({"uid": ps.user_id, "csrf": ps.csrf, "w": ps.can_write, "g": ps.generation})
    secure = settings.public_url.startswith("https://")
    response.set_cookie(COOKIE, value, max_age=MAX_AGE, httponly=True, samesite="lax", secure=secure, path="/")


def session_caller(request: Request, session: Session) -> Caller | None:
    """The cookie's user as the services see them, in one statement; None without a logged-in cookie, or when
    the user logged out everywhere or changed password since it was issued."""
    ps = read_session(request)
    if ps.user_id is None:
        return None
    return caller_for_user_id(session, ps.user_id, can_write=ps.can_write, generation=ps.generation)
