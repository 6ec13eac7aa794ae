"""Reward services: each one's host and devices, request rate, latency p50/p99, errors and the jobs using it,
as services.reward_services answers the API (one definition of every figure)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.services.auth import Caller
from server.services.reward_services import list_services
from web.pages.deps import page_caller
from web.pages.render import render

router = APIRouter()
PAGE_SIZE = 100


def _context(session: Session, caller: Caller) -> dict[str, Any]:
    page = list_services(session, caller, limit=PAGE_SIZE)
    return {"services": page.items, "total": page.total}


@router.get("/services", response_class=HTMLResponse)
def services_page(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    return render(request, "services.html", {"section": "services", **_context(session, caller)})


@router.get("/services/body", response_class=HTMLResponse)
def services_body(
    request: Request, caller: Caller = Depends(page_caller), session: Session = Depends(get_session)
) -> HTMLResponse:
    """The services table alone, polled every 5 s."""
    return render(request, "partials/services_body.html", _context(session, caller))
