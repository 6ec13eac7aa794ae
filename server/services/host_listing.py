"""Hosts with their devices and which job holds each device, as the hosts page and API show them."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, selectinload

from server.models import Allocation, Host, Job
from server.schemas.hosts import DeviceOut, HostList, HostOut
from server.services.auth import Caller
from server.services.scoping import scope_jobs


def list_hosts(session: Session, caller: Caller) -> HostList:
    """Every host; a device's holding job is named only when the caller may see that job."""
    hosts = session.scalars(select(Host).options(selectinload(Host.devices)).order_by(Host.name)).all()
    live = select(Allocation.device_id, Allocation.job_id).where(Allocation.released_at.is_(None))
    held: dict[int, int] = {device_id: job_id for device_id, job_id in session.execute(live)}
    visible = set(session.scalars(scope_jobs(select(Job.id).where(Job.id.in_(set(held.values()))), caller)))
    items = [
        HostOut(
            id=host.id,
            name=host.name,
            address=host.address,
            status=host.status,
            hub_offline=host.hub_offline,
            last_heartbeat_at=host.last_heartbeat_at,
            registered_at=host.registered_at,
            devices=[
                DeviceOut(
                    id=d.id,
                    index=d.index,
                    device_type=d.device_type,
                    model=d.model,
                    memory_bytes=d.memory_bytes,
                    enabled=d.enabled,
                    busy=d.id in held,
                    job_id=held[d.id] if held.get(d.id) in visible else None,
                )
                for d in host.devices
            ],
        )
        for host in hosts
    ]
    return HostList(items=items)


def admin_states(session: Session) -> dict[int, str]:
    """Each host's admin choice (active, drained, disabled): what a lost host returns to."""
    return {host_id: state for host_id, state in session.execute(select(Host.id, Host.admin_state))}


def device_pools(session: Session) -> dict[int, str]:
    """The pool (rollout, trainer) each device held by a DigenRL job serves."""
    held = select(Allocation.device_id, Allocation.pool).where(
        Allocation.released_at.is_(None), Allocation.pool.is_not(None)
    )
    return {device_id: pool for device_id, pool in session.execute(held)}
