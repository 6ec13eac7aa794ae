"""Hosts, their devices and the job holding each, and the queue with each job's position and wait reason."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.services import pages
from server.services.auth import Caller
from server.services.host_listing import list_hosts
from web.pages.deps import page_caller
from web.pages.render import render

router = APIRouter()


def _context(session: Session, caller: Caller) -> dict[str, Any]:
    hosts = list_hosts(session, caller).items
    held = [d.job_id for h in hosts for d in h.devices if d.job_id is not None]
    holders = {job.id: job for job in pages.visible_jobs(session, caller, held)}
    return {"hosts": hosts, "holders": holders, "queue": pages.queue(session, caller)}


@router.get("/hosts", response_class=HTMLResponse)
def hosts_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    return render(request, "hosts.html", {"section": "hosts", **_context(session, caller)})


@router.get("/hosts/body", response_class=HTMLResponse)
def hosts_body(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    """Hosts and queue alone, polled every 5 s."""
    return render(request, "partials/hosts_body.html", _context(session, caller))
