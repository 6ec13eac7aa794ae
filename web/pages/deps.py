"""Dependencies of the page routes: the logged-in caller (from the session cookie) and the CSRF check."""

from __future__ import annotations

import secrets
from urllib.parse import quote

from fastapi import Depends, HTTPException, Request
from sqlalchemy.orm import Session

from server.api.deps import JobId, get_session
from server.models import Job, User
from server.schemas.jobs import JobDetail
from server.services.auth import Caller, caller_for_user
from server.services.errors import NotFound
from server.services.jobs import job_detail
from server.services.scoping import get_visible_job
from web.pages.session import read_session


class PageNotFound(Exception):
    """Something a page asked for is missing or not visible; mount_web answers with the 404 page."""

    def __init__(self, what: str) -> None:
        super().__init__(what)
        self.what = what


def page_caller(request: Request, session: Session = Depends(get_session)) -> Caller:
    """The logged-in user as the services see them; otherwise a redirect to the login page.

    htmx requests get 401 with HX-Redirect instead, so a poll never swaps the login page into a table.
    """
    ps = read_session(request)
    user = session.get(User, ps.user_id) if ps.user_id is not None else None
    if user is not None and user.session_generation != ps.generation:
        user = None  # the user logged out (everywhere) or changed password since this cookie was issued
    if user is None:
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        login = f"/login?next={quote(target, safe='')}"
        if request.headers.get("hx-request"):
            raise HTTPException(status_code=401, detail="login required", headers={"HX-Redirect": login})
        raise HTTPException(status_code=303, detail="login required", headers={"Location": login})
    request.state.user = user
    return caller_for_user(session, user, can_write=ps.can_write)


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


def page_job(job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)) -> Job:
    """The path's job if the caller's teams may see it (services.scoping); else the 404 page."""
    try:
        return get_visible_job(session, caller, job_id)
    except NotFound:
        raise PageNotFound(f"job #{job_id}") from None


def page_job_detail(
    job_id: JobId, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> JobDetail:
    """The path's job as services.jobs.job_detail shows it (spec, events, allocations); else the 404 page."""
    try:
        return job_detail(session, caller, job_id)
    except NotFound:
        raise PageNotFound(f"job #{job_id}") from None
