"""What an admin does to the inventory: drain, disable or re-enable a host, disable or enable a device.

- drain: the host takes no new job; the jobs running there finish normally.
- disable: the host is out of service now; its jobs are stopped and go back to the queue
  (an infrastructure event, so they resume from their checkpoint elsewhere).
- enable: back in service.
A device disabled while a job holds it stays held until that job ends; it takes no new job.
The admin's choice is kept in `admin_state`, apart from liveness: it survives the worker re-registering
and the host being lost and coming back (see hosts.live_status). A lost host stays `lost` until it heartbeats.
"""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.models import AdminState, Device, Host, HostStatus
from server.services.errors import NotFound
from server.services.hosts import live_status
from server.services.retry_policy import requeue_jobs_on_host


def _host(session: Session, host_id: int) -> Host:
    host = session.get(Host, host_id, with_for_update=True, populate_existing=True)
    if host is None:
        raise NotFound(f"host {host_id} not found")
    return host


def _choose(host: Host, admin_state: AdminState) -> Host:
    host.admin_state = admin_state
    if host.status != HostStatus.LOST:
        host.status = live_status(host)
    return host


def drain_host(session: Session, host_id: int) -> Host:
    return _choose(_host(session, host_id), AdminState.DRAINING)


def enable_host(session: Session, host_id: int) -> Host:
    return _choose(_host(session, host_id), AdminState.ACTIVE)


def disable_host(session: Session, host_id: int) -> tuple[Host, list[int]]:
    """Out of service now; returns the jobs sent back to the queue (their workers stop them)."""
    host = _choose(_host(session, host_id), AdminState.DISABLED)
    return host, requeue_jobs_on_host(session, host, f"host {host.name} disabled by an admin")


def set_device_enabled(session: Session, device_id: int, enabled: bool) -> Device:
    device = session.get(Device, device_id, with_for_update=True, populate_existing=True)
    if device is None:
        raise NotFound(f"device {device_id} not found")
    device.enabled = enabled
    return device
