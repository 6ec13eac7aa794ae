"""Dependencies of the page routes: the logged-in caller (from the session cookie) and the CSRF check; and the
one-trip way of running the reads pages poll most (`run_as_page_caller`)."""

from __future__ import annotations

import secrets
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING, Concatenate
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from server.api.deps import P, T, get_session, in_one_trip
from server.api.page_session import read_session, session_caller
from server.services.auth import Caller
from server.services.errors import NotFound
from server.services.scoping import get_visible_job

if TYPE_CHECKING:
    from server.services.pages import Job


class PageNotFound(Exception):
    """Something a page asked for is missing or not visible; mount_web answers with the 404 page."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def page_caller(request: Request, session: Session = Depends(get_session)) -> Caller:
    """The logged-in user as the services see them; otherwise a redirect to the login page."""
    return caller_of_session(request, session)


def caller_of_session(request: Request, session: Session) -> Caller:
    """The session cookie's user (also shown in the page header), in one statement; a session whose credential
    ended (logout everywhere, a new password, its token revoked or expired, the user disabled) is logged
    out. No user: a redirect to the
    login page, or 401 with HX-Redirect for htmx requests, so a poll never swaps the login page into a table."""
    caller = session_caller(request, session)
    if caller is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        login = f"/login?next={quote(target, safe='')}"
        if request.headers.get("hx-request"):
            raise HTTPException(status_code=401, detail="login required", headers={"HX-Redirect": login})
        raise HTTPException(status_code=303, detail="login required", headers={"Location": login})
    request.state.user = caller
    return caller


async def run_as_page_caller(
    request: Request, work: Callable[Concatenate[Session, Caller, P], T], *args: P.args, **kwargs: P.kwargs
) -> T:
    """A read in one trip to the thread pool (server.api.deps.in_one_trip) as the session cookie's user, for
    the pages polled most."""
    identify = partial(caller_of_session, request)
    return await in_one_trip(request.app.state.read_sessionmaker, identify, work, *args, **kwargs)


async def require_csrf(request: Request) -> None:
    """Refuse a state-changing request unless its X-CSRF-Token header or csrf_token field is the session's token."""
    ps = read_session(request)
    sent = request.headers.get("x-csrf-token")
    if not sent:
        form = await request.form()
        value = form.get("csrf_token")
        sent = value if isinstance(value, str) else None
    if not sent or not secrets.compare_digest(sent, ps.csrf):
        raise HTTPException(status_code=403, detail="CSRF token missing or wrong; reload the page and try again")


def visible_page_job(session: Session, caller: Caller, job_id: int) -> Job:
    try:
        return get_visible_job(session, caller, job_id)
    except NotFound:
        raise PageNotFound(f"job #{job_id}") from None
