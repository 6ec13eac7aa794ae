"""Reward services in a scheduler pass: placing pending ones on free devices (before queued jobs: a service
is infrastructure the team's jobs wait for), telling which are healthy (a job naming a service is placed only
then), and putting back to pending a service whose devices were freed under it (its host lost, its worker
restarted, its task never started)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import PLACED_SERVICE_STATES, Allocation, Host, RewardService, ServiceState, Team, utcnow
from server.services.placement import FreeByHost, FreeDevice
from server.services.service_state import set_state

RUN_SERVICE_TASK = "worker.run_service"


@dataclass(frozen=True)
class ServiceTask:
    """One generation of one reward service, to be run by the worker on `queue`."""

    service_id: int
    generation: int
    host: str
    queue: str

    def task_kwargs(self) -> dict[str, int]:
        return {"service_id": self.service_id, "generation": self.generation}


def place_pending_services(
    session: Session, free: FreeByHost, hosts: dict[int, Host], usage: dict[int, int]
) -> list[ServiceTask]:
    """Place pending services, oldest first, each on one host with enough free devices of its type (the host
    with the fewest free first, as jobs are placed); takes them out of `free` and counts them in `usage`."""
    tasks: list[ServiceTask] = []
    quotas = dict(session.execute(select(Team.id, Team.max_devices).where(Team.max_devices.is_not(None))).all())
    pending = session.scalars(
        select(RewardService)
        .where(RewardService.state == ServiceState.PENDING)
        .order_by(RewardService.id)
        .with_for_update(skip_locked=True)
    ).all()
    for service in pending:
        limit = quotas.get(service.team_id)
        used = usage.get(service.team_id or 0, 0)
        if limit is not None and used + service.devices > limit:
            service.wait_reason = f"team quota: {used} of {limit} devices in use, needs {service.devices} more"
            continue
        fits = sorted(
            (
                (len(devices), host_id, devices)
                for (host_id, kind), devices in free.items()
                if kind == service.device_type and len(devices) >= service.devices
            ),
            key=lambda fit: (fit[0], fit[1]),
        )
        if not fits:
            largest = max((len(d) for (_, kind), d in free.items() if kind == service.device_type), default=0)
            service.wait_reason = (
                f"needs {service.devices} {service.device_type} device(s) on one host; the largest free host has "
                f"{largest}"
            )
            continue
        _, host_id, devices = fits[0]
        taken = devices[: service.devices]
        _hold(session, service, host_id, taken)
        free[(host_id, service.device_type)] = devices[service.devices :]
        if service.team_id is not None:
            usage[service.team_id] = used + service.devices
        host = hosts[host_id]
        tasks.append(ServiceTask(service.id, service.generation, host.name, host.queue))
    return tasks


def _hold(session: Session, service: RewardService, host_id: int, devices: list[FreeDevice]) -> None:
    service.generation += 1
    service.host_id = host_id
    service.wait_reason = None
    for device in devices:
        session.add(Allocation(service_id=service.id, attempt=service.generation, device_id=device.id, host_id=host_id))
    set_state(session, service, ServiceState.STARTING)


def healthy_services(session: Session) -> dict[tuple[int | None, str], RewardService]:
    """Healthy services by (team id, name): what a queued job naming a service waits for."""
    return {
        (service.team_id, service.name): service
        for service in session.scalars(select(RewardService).where(RewardService.state == ServiceState.HEALTHY))
    }


def reconcile_services(session: Session, scheduled_timeout_seconds: float) -> list[int]:
    """Placed services whose devices were freed under them (host lost, worker restarted) back to pending, or
    stopped when a stop was asked; a generation whose worker never started it within the timeout is freed
    first (its task was lost). Returns the ids of the services put back to pending."""
    cutoff = utcnow() - timedelta(seconds=scheduled_timeout_seconds)
    now = utcnow()
    for allocation in session.scalars(
        select(Allocation).where(
            Allocation.service_id.is_not(None),
            Allocation.released_at.is_(None),
            Allocation.started_at.is_(None),
            Allocation.created_at < cutoff,
        )
    ):
        allocation.released_at = now
    held = select(Allocation.service_id).where(Allocation.service_id.is_not(None), Allocation.released_at.is_(None))
    orphaned = session.scalars(
        select(RewardService)
        .where(RewardService.state.in_(PLACED_SERVICE_STATES), RewardService.id.not_in(held))
        .with_for_update(skip_locked=True)
    ).all()
    requeued = []
    for service in orphaned:
        if service.state == ServiceState.STOPPING:
            set_state(session, service, ServiceState.STOPPED)
            continue
        host = service.host.name if service.host else "its host"
        set_state(session, service, ServiceState.PENDING)
        service.wait_reason = f"its devices on {host} were freed (host lost or worker restarted); placing it again"
        requeued.append(service.id)
    return requeued
