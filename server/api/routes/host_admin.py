"""Admin-only inventory actions: drain, enable or disable a host; disable or enable a device."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path

from server.api.deps import SessionDep, WriterDep
from server.schemas.common import MAX_INT32, ErrorBody
from server.schemas.host_admin import DeviceState, HostState
from server.services import host_admin
from server.services.auth import Caller
from server.services.errors import Forbidden
from server.services.scoping import can_manage_hosts

router = APIRouter(
    tags=["hosts"],
    responses={403: {"model": ErrorBody, "description": "not an admin"}, 404: {"model": ErrorBody}},
)

Id = Annotated[int, Path(ge=1, le=MAX_INT32)]


def admin_caller(caller: WriterDep) -> Caller:
    if not can_manage_hosts(caller):
        raise Forbidden("only a server admin or a team admin may change the inventory")
    return caller


AdminDep = Annotated[Caller, Depends(admin_caller)]


@router.post("/hosts/{host_id}/drain", response_model=HostState)
def drain_host(host_id: Id, session: SessionDep, _: AdminDep) -> HostState:
    host = host_admin.drain_host(session, host_id)
    session.commit()
    return HostState(id=host.id, name=host.name, status=host.status, requeued_jobs=[])


@router.post("/hosts/{host_id}/enable", response_model=HostState)
def enable_host(host_id: Id, session: SessionDep, _: AdminDep) -> HostState:
    host = host_admin.enable_host(session, host_id)
    session.commit()
    return HostState(id=host.id, name=host.name, status=host.status, requeued_jobs=[])


@router.post("/hosts/{host_id}/disable", response_model=HostState)
def disable_host(host_id: Id, session: SessionDep, _: AdminDep) -> HostState:
    host, requeued = host_admin.disable_host(session, host_id)
    session.commit()
    return HostState(id=host.id, name=host.name, status=host.status, requeued_jobs=requeued)


@router.post("/devices/{device_id}/disable", response_model=DeviceState)
def disable_device(device_id: Id, session: SessionDep, _: AdminDep) -> DeviceState:
    return _device_state(session, device_id, enabled=False)


@router.post("/devices/{device_id}/enable", response_model=DeviceState)
def enable_device(device_id: Id, session: SessionDep, _: AdminDep) -> DeviceState:
    return _device_state(session, device_id, enabled=True)


def _device_state(session: SessionDep, device_id: int, enabled: bool) -> DeviceState:
    device = host_admin.set_device_enabled(session, device_id, enabled)
    session.commit()
    return DeviceState(id=device.id, host_id=device.host_id, index=device.index, enabled=device.enabled)
