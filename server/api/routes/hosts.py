"""Worker hosts, their devices, and which job holds each."""

from __future__ import annotations

from fastapi import APIRouter

from server.api.deps import CallerDep, SessionDep
from server.schemas.hosts import HostList
from server.services.host_listing import list_hosts

router = APIRouter(tags=["hosts"])


@router.get("/hosts", response_model=HostList)
def get_hosts(session: SessionDep, caller: CallerDep) -> HostList:
    return list_hosts(session, caller)
