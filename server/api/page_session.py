"""The signed page-session cookie: who is logged in, with what credential, and the CSRF token of their forms.

The pages log in with it (web.pages.auth), and the API accepts it for reads (server.api.deps), so a page
draws its charts and images from the API's own handlers. The cookie is signed with the app's secret key
(server.secret_key: create_api_app puts it in the settings). It records what opened it, a token id or the
user's password generation, and every request checks that credential again (`session_caller`), so a revoked
or expired token, a new password, a logout or a disabled user ends it.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from datetime import UTC, datetime

from fastapi import Request, Response
from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy.orm import Session

from server.config import Settings
from server.services.auth import Caller, caller_of_page_session

COOKIE = "sfumato_session"
MAX_AGE = 7 * 24 * 3600


@dataclass
class PageSession:
    user_id: int | None
    csrf: str
    can_write: bool = True
    generation: int = 0
    token_id: int | None = None  # the API token that opened the session; None: a password
    changed: bool = False
    expires_at: datetime | None = None  # the token's expiry: the cookie lasts no longer


def _settings(request: Request) -> Settings:
    return request.app.state.settings  # type: ignore[no-any-return]


def _serializer(settings: Settings) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(settings.secret_key, salt="sfumato-page-session")


def new_session(
    user_id: int | None = None,
    *,
    can_write: bool = True,
    generation: int = 0,
    token_id: int | None = None,
    expires_at: datetime | None = None,
) -> PageSession:
    """A fresh session (and CSRF token); `generation` is the user's session_generation at login, `token_id`
    and `expires_at` the token it was opened with."""
    csrf = secrets.token_urlsafe(32)
    return PageSession(user_id, csrf, can_write, generation, token_id, changed=True, expires_at=expires_at)


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
            token_id = data.get("t")
            ps = PageSession(
                user_id=data.get("uid"),
                csrf=str(data["csrf"]),
                can_write=bool(data.get("w", True)),
                generation=int(data.get("g", 0)),
                token_id=int(token_id) if token_id is not None else None,
            )
        except (BadSignature, KeyError, TypeError, ValueError, AttributeError):
            ps = None
    ps = ps or new_session()
    request.state.page_session = ps
    return ps


def write_cookie(request: Request, response: Response, ps: PageSession) -> None:
    """Set the cookie when the session is new or changed (login, logout), for at most its token's lifetime."""
    if not ps.changed:
        return
    settings = _settings(request)
    data = {"uid": ps.user_id, "csrf": ps.csrf, "w": ps.can_write, "g": ps.generation, "t": ps.token_id}
    value = _serializer(settings).dumps(data)
    max_age = MAX_AGE
    if ps.expires_at is not None:
        left = ps.expires_at - datetime.now(UTC).replace(tzinfo=None)  # naive UTC, as the database keeps it
        max_age = max(0, min(MAX_AGE, int(left.total_seconds())))
    secure = settings.public_url.startswith("https://")
    response.set_cookie(COOKIE, value, max_age=max_age, httponly=True, samesite="lax", secure=secure, path="/")


def session_caller(request: Request, session: Session) -> Caller | None:
    """The cookie's user as the services see them, in one statement; None without a logged-in cookie, or once
    the session's credential has ended (services.auth.caller_of_page_session)."""
    ps = read_session(request)
    if ps.user_id is None:
        return None
    return caller_of_page_session(
        session, ps.user_id, can_write=ps.can_write, generation=ps.generation, token_id=ps.token_id
    )
