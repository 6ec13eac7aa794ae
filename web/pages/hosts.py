"""Hosts, their devices and the job holding each, and the queue with each job's position and wait reason.

A lost host also shows the admin's choice it returns to (drained, disabled); a device held by a DigenRL job
shows which pool it serves; a queued pool job shows what each pool needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Depends, Request
from fastapi.responses import HTMLResponse
from sqlalchemy.orm import Session

from server.api.deps import get_session
from server.services import pages
from server.services.auth import Caller
from server.services.host_listing import admin_states, device_pools, list_hosts
from web.pages.deps import page_caller
from web.pages.render import render

if TYPE_CHECKING:
    from server.services.pages import Job

router = APIRouter()


def pool_needs(job: Job) -> str | None:
    """'rollout 2 cuda 'L40S' + trainer 2 cuda 'H100'' for a queued job with DigenRL pools."""
    pools = (job.spec.get("resources") or {}).get("pools") if isinstance(job.spec, dict) else None
    if not pools:
        return None
    parts = []
    for name in ("rollout", "trainer"):
        pool = pools.get(name) or {}
        model = f" {pool['gpu_model']!r}" if pool.get("gpu_model") else ""
        parts.append(f"{name} {pool.get('devices')} {job.device_type}{model}")
    return " + ".join(parts)


def _context(session: Session, caller: Caller) -> dict[str, Any]:
    hosts = list_hosts(session, caller).items
    held = [d.job_id for h in hosts for d in h.devices if d.job_id is not None]
    holders = {job.id: job for job in pages.visible_jobs(session, caller, held)}
    queue = pages.queue(session, caller)
    return {
        "hosts": hosts,
        "holders": holders,
        "queue": queue,
        "admin_states": admin_states(session),
        "device_pools": device_pools(session),
        "pool_needs": {job.id: needs for job in queue if (needs := pool_needs(job))},
    }


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
