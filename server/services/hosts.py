"""Worker hosts in the database: registration with a device inventory, heartbeats, lost hosts.

The worker's host agent detects the devices (it may import torch); this module only stores
what it reports, so the server never needs torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import AdminState, Device, Host, HostStatus, utcnow
from server.states import LIVE_STATUS


@dataclass(frozen=True)
class DeviceInfo:
    index: int
    device_type: str
    model: str
    memory_bytes: int | None = None


def model_matches(model: str, wanted: str | None) -> bool:
    """A device matches a wanted GPU model case-insensitively by substring ("a100" in "NVIDIA A100-SXM4-40GB")."""
    return wanted is None or wanted.casefold() in model.casefold()


def host_queue(name: str) -> str:
    """The Celery queue a host's worker consumes: one per host."""
    return f"host.{name}"


def register_host(
    session: Session, name: str, devices: list[DeviceInfo], address: str | None = None, hub_offline: bool = False
) -> Host:
    """Create or refresh a host and its devices; devices no longer reported are disabled."""
    now = utcnow()
    host = session.scalar(select(Host).where(Host.name == name))
    if host is None:
        host = Host(
            name=name,
            queue=host_queue(name),
            address=address,
            status=HostStatus.ONLINE,
            admin_state=AdminState.ACTIVE,
            registered_at=now,
        )
        session.add(host)
        session.flush()
    host.queue = host_queue(name)
    host.address = address
    host.hub_offline = hub_offline
    host.last_heartbeat_at = now
    host.registered_at = now
    host.status = live_status(host)

    existing = {d.index: d for d in session.scalars(select(Device).where(Device.host_id == host.id))}
    reported = {d.index for d in devices}
    for info in devices:
        device = existing.get(info.index)
        if device is None:
            session.add(
                Device(
                    host_id=host.id,
                    index=info.index,
                    device_type=info.device_type,
                    model=info.model,
                    memory_bytes=info.memory_bytes,
                )
            )
            continue
        if (device.device_type, device.model) != (info.device_type, info.model):
            device.enabled = True  # different hardware in that slot: the old admin choice no longer applies
        device.device_type = info.device_type
        device.model = info.model
        device.memory_bytes = info.memory_bytes
    for index, device in existing.items():
        if index not in reported:
            device.enabled = False
    session.flush()
    return host


def live_status(host: Host) -> HostStatus:
    """The status of a host that heartbeats: what the admin chose (`online` when nothing)."""
    return LIVE_STATUS[AdminState(host.admin_state or AdminState.ACTIVE)]


def heartbeat(session: Session, name: str) -> bool:
    """Record that a host is alive; a lost host comes back to the admin's choice. False when it is not registered."""
    host = session.scalar(select(Host).where(Host.name == name))
    if host is None:
        return False
    host.last_heartbeat_at = utcnow()
    if host.status == HostStatus.LOST:
        host.status = live_status(host)
    return True


def mark_lost_hosts(session: Session, lost_after_seconds: float, now: datetime | None = None) -> list[Host]:
    """Hosts whose last heartbeat is older than the timeout become `lost` (their admin state stays); returns them."""
    cutoff = (now or utcnow()) - timedelta(seconds=lost_after_seconds)
    hosts = list(session.scalars(select(Host).where(Host.status != HostStatus.LOST, Host.last_heartbeat_at < cutoff)))
    for host in hosts:
        host.status = HostStatus.LOST
    return hosts
