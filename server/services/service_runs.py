"""The database side of running one generation of a reward service on a worker.

The worker's task calls `start_service` (claim the generation, mark its devices started), then while the
server runs `mark_listening`, `mark_healthy`, `mark_unhealthy`, `mark_died`, `record_scrape` and `stop_reason`,
and `finish_service` at the end. Each re-reads the service under a row lock and does nothing for a generation
that is no longer current, so a task the broker delivers twice, or late, is harmless (as job_runs does)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import PLACED_SERVICE_STATES, Allocation, Device, RewardService, ServiceState, utcnow
from server.services.reward_service_figures import rate_window
from server.services.service_state import set_state

# A service that exits (or never answers) this many starts in a row without once being healthy has failed:
# its reward or weights do not load, and restarting it again would hold its devices for nothing.
MAX_FAILED_STARTS = 3
ERROR_TAIL_LINES = 30

STOP_REQUESTED = "stop"
STOP_SUPERSEDED = "superseded"
STOP_SHUTDOWN = "shutdown"


@dataclass(frozen=True)
class ServicePlan:
    """Everything the worker needs to start one generation of a service."""

    service_id: int
    generation: int
    name: str
    reward: str
    path: str | None
    device_type: str
    device_indices: list[int]
    run_dir: Path
    log_path: Path


def _lock(session: Session, service_id: int) -> RewardService | None:
    return session.get(RewardService, service_id, with_for_update=True, populate_existing=True)


def _current(service: RewardService | None, generation: int) -> bool:
    return service is not None and service.generation == generation and service.state in PLACED_SERVICE_STATES


def _allocations(session: Session, service_id: int, generation: int) -> list[Allocation]:
    return list(
        session.scalars(
            select(Allocation).where(
                Allocation.service_id == service_id,
                Allocation.attempt == generation,
                Allocation.released_at.is_(None),
            )
        )
    )


def start_service(
    session: Session, service_id: int, generation: int, host_name: str, artifact_root: Path
) -> ServicePlan | None:
    """Claim a generation: None when it is stale, not on this host, or was stopped meanwhile."""
    service = _lock(session, service_id)
    if service is None or not _current(service, generation):
        return None
    allocations = _allocations(session, service_id, generation)
    if not allocations or any(a.host.name != host_name for a in allocations):
        return None
    if service.state == ServiceState.STOPPING:
        finish_service(session, service_id, generation, STOP_REQUESTED)
        return None
    now = utcnow()
    for allocation in allocations:
        allocation.started_at = allocation.started_at or now
    run_dir = artifact_root / "services" / str(service.id)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    indices = session.scalars(
        select(Device.index).where(Device.id.in_([a.device_id for a in allocations])).order_by(Device.index)
    ).all()
    return ServicePlan(
        service_id=service.id,
        generation=generation,
        name=service.name,
        reward=service.reward,
        path=service.path,
        device_type=service.device_type,
        device_indices=list(indices),
        run_dir=run_dir,
        log_path=run_dir / "logs" / f"generation-{generation}.log",
    )


def mark_listening(session: Session, service_id: int, generation: int, url: str) -> bool:
    """The server bound its port: jobs reach it at `url` (kept across restarts of the generation)."""
    service = _lock(session, service_id)
    if not _current(service, generation):
        return False
    assert service is not None
    service.url = url
    return True


def mark_healthy(session: Session, service_id: int, generation: int) -> bool:
    """GET /healthz answered 200."""
    service = _lock(session, service_id)
    if not _current(service, generation):
        return False
    assert service is not None
    service.last_health_at = utcnow()
    service.failed_starts = 0
    service.started_at = service.started_at or service.last_health_at
    if service.state in (ServiceState.STARTING, ServiceState.UNHEALTHY):
        service.error = None
        set_state(session, service, ServiceState.HEALTHY)
    return True


def mark_unhealthy(session: Session, service_id: int, generation: int, why: str) -> bool:
    """A healthy server stopped answering its health check (it is restarted if that goes on)."""
    service = _lock(session, service_id)
    if not _current(service, generation):
        return False
    assert service is not None
    if service.state == ServiceState.HEALTHY:
        service.error = why
        set_state(session, service, ServiceState.UNHEALTHY)
    return True


def mark_died(session: Session, service_id: int, generation: int, why: str, tail: list[str], was_healthy: bool) -> bool:
    """The server process ended (or was killed for not answering); True when the worker should start it again.
    After MAX_FAILED_STARTS starts in a row that never became healthy the service fails and frees its devices."""
    service = _lock(session, service_id)
    if not _current(service, generation):
        return False
    assert service is not None
    if service.state == ServiceState.STOPPING:
        return False
    service.restarts += 1
    service.failed_starts = 0 if was_healthy else service.failed_starts + 1
    detail = "\n".join(tail[-ERROR_TAIL_LINES:])
    service.error = f"reward server {why}\n{detail}".rstrip()
    if service.failed_starts >= MAX_FAILED_STARTS:
        service.error = f"never became healthy in {MAX_FAILED_STARTS} starts in a row; last: {service.error}"
        _release(session, service_id, generation)
        set_state(session, service, ServiceState.FAILED)
        return False
    if service.state in (ServiceState.HEALTHY, ServiceState.STARTING):
        set_state(session, service, ServiceState.UNHEALTHY)
    return True


def record_scrape(session: Session, service_id: int, generation: int, scrape: dict[str, Any]) -> None:
    """Keep the last scrape of the server's /metrics and the earlier ones of the rate window
    (services.reward_service_figures defines the window and reads them)."""
    service = _lock(session, service_id)
    if _current(service, generation):
        assert service is not None
        service.recent_metrics = rate_window(service.recent_metrics, service.metrics, scrape)
        service.metrics = scrape


def stop_reason(session: Session, service_id: int, generation: int) -> str | None:
    """Why the running server should stop now: a stop was asked, or this generation is no longer current."""
    service = session.get(RewardService, service_id, populate_existing=True)
    if service is None or not _current(service, generation):
        return STOP_SUPERSEDED
    return STOP_REQUESTED if service.stop_requested else None


def finish_service(session: Session, service_id: int, generation: int, stopped_for: str | None) -> str | None:
    """The server of this generation has exited: free its devices; a stop ends the service, a worker shutting
    down puts it back to pending (placed again). Returns the service's state afterwards."""
    service = _lock(session, service_id)
    if service is None:
        return None
    _release(session, service_id, generation)
    if service.generation != generation or service.state not in PLACED_SERVICE_STATES:
        return service.state
    if service.state == ServiceState.STOPPING:
        set_state(session, service, ServiceState.STOPPED)
    elif stopped_for == STOP_SHUTDOWN:
        set_state(session, service, ServiceState.PENDING)
        service.wait_reason = "its worker shut down; placing it again"
    return service.state


def _release(session: Session, service_id: int, generation: int) -> None:
    now = utcnow()
    for allocation in _allocations(session, service_id, generation):
        allocation.released_at = now
