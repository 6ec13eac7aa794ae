"""Creating, listing, reading and stopping reward services, for the API, the pages, the CLI and the client.

A service belongs to a team and follows the jobs' visibility rules (services.scoping): another team's
service is not found, never forbidden. Placing, starting and health are the scheduler's and the worker's
(services.service_placement, services.service_runs)."""

from __future__ import annotations

from sqlalchemy import Select, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, selectinload

from server.config import Settings
from server.models import (
    LIVE_SERVICE_STATES,
    Allocation,
    Device,
    RewardService,
    ServiceState,
    User,
)
from server.schemas.services import ServiceCreate, ServiceOut, ServicePage
from server.services import audit
from server.services.auth import Caller
from server.services.errors import Conflict, FieldErrors, Forbidden, NotFound
from server.services.reward_service_figures import figures, jobs_using
from server.services.scheduler_wakeup import wake_scheduler
from server.services.scoping import ensure_writer, team_for_submission, team_role
from server.services.service_devices import service_device_type
from server.services.service_state import set_state
from trainer.spec import (
    MODEL_REWARDS,
    REMOTE_REWARD,
    SERVICE_REWARD,
    VLM_JUDGE,
    RewardSpec,
    known_rewards,
    spec_errors,
)

# Rewards a service cannot serve: both are scored through a reward server that is already running elsewhere.
_NOT_SERVABLE = {
    SERVICE_REWARD: "a service serves a reward; it cannot serve another service",
    REMOTE_REWARD: f"a service runs its own reward server; {REMOTE_REWARD!r} scores through another one at a URL",
    VLM_JUDGE: f"{VLM_JUDGE!r} asks a judge at its own OpenAI-compatible endpoint; a job names that endpoint's URL",
}
# States stop_service acts on; a stopping service is on its way and a stopped or failed one is over.
_STOPPABLE_STATES = tuple(s for s in LIVE_SERVICE_STATES if s != ServiceState.STOPPING)


def create_service(session: Session, caller: Caller, data: ServiceCreate, settings: Settings) -> ServiceOut:
    """Check the reward as a job's reward is checked, and that some host could hold the devices; store it
    pending for the scheduler. Nothing is stored on any error."""
    team = team_for_submission(caller, data.team)
    _check_reward(data, settings)
    device_type = service_device_type(session, data.device_type, data.devices)
    if _live_named(session, team.team_id, data.name) is not None:
        raise FieldErrors.one("name", f"team {team.team_name!r} already has a live service named {data.name!r}")
    service = RewardService(
        name=data.name,
        team_id=team.team_id,
        reward=data.reward,
        path=data.path,
        device_type=device_type,
        devices=data.devices,
        state=ServiceState.PENDING,
        created_by_id=caller.user_id,
    )
    session.add(service)
    try:
        session.flush()
    except IntegrityError as exc:  # the same name created at the same moment
        session.rollback()
        raise FieldErrors.one(
            "name", f"team {team.team_name!r} already has a live service named {data.name!r}"
        ) from exc
    audit.record(session, "service.create", caller, team_id=team.team_id, detail=f"{service.name} ({service.reward})")
    wake_scheduler(session)
    session.commit()
    return service_detail(session, caller, service.id)


def servable_rewards() -> list[str]:
    """The rewards create_service accepts by name: the built-in and plugin ones (trainer.spec) it can serve."""
    return sorted(known_rewards() - _NOT_SERVABLE.keys())


def weightless_reward() -> str:
    """The first servable reward that loads no weights: one a new service can run with no path given."""
    return next(name for name in servable_rewards() if name not in MODEL_REWARDS)


def _check_reward(data: ServiceCreate, settings: Settings) -> None:
    """The reward name and weights path, by trainer.spec's rules for a job's reward entry."""
    if data.reward in _NOT_SERVABLE:
        raise FieldErrors.one("reward", _NOT_SERVABLE[data.reward])
    try:
        RewardSpec.model_validate(
            {"name": data.reward, "path": data.path}, context={"path_roots": settings.resolved_path_roots()}
        )
    except ValueError as exc:
        errors = spec_errors(exc)
        raise FieldErrors(
            [{"field": "reward" if e["field"] == "name" else e["field"], "message": e["message"]} for e in errors]
        ) from exc


def _live_named(session: Session, team_id: int | None, name: str) -> RewardService | None:
    return session.scalar(
        select(RewardService).where(
            RewardService.team_id == team_id,
            RewardService.name == name,
            RewardService.state.in_(LIVE_SERVICE_STATES),
        )
    )


def _scoped(caller: Caller) -> Select[tuple[RewardService]]:
    query = select(RewardService)
    if not caller.is_admin:
        query = query.where(RewardService.team_id.in_(caller.team_ids))
    return query


def get_visible_service(session: Session, caller: Caller, service_id: int) -> RewardService:
    """The service if one of the caller's teams owns it (server admins: any); else not found."""
    service = session.scalar(_scoped(caller).where(RewardService.id == service_id))
    if service is None:
        raise NotFound(f"service {service_id} not found")
    return service


def list_services(
    session: Session, caller: Caller, *, live_only: bool = False, limit: int = 50, offset: int = 0
) -> ServicePage:
    """Newest first, within the caller's teams; `total` counts every match, not just this page."""
    query = _scoped(caller)
    if live_only:
        query = query.where(RewardService.state.in_(LIVE_SERVICE_STATES))
    total = session.scalar(select(func.count()).select_from(query.subquery())) or 0
    services = session.scalars(
        query.options(selectinload(RewardService.team), selectinload(RewardService.host))
        .order_by(RewardService.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    return ServicePage(items=_out(session, list(services)), total=total, limit=limit, offset=offset)


def service_detail(session: Session, caller: Caller, service_id: int) -> ServiceOut:
    return _out(session, [get_visible_service(session, caller, service_id)])[0]


def stop_service(session: Session, caller: Caller, service_id: int) -> ServiceOut:
    """Pending → stopped at once; placed → stopping, and its worker stops the server and frees the devices.
    A team's admins stop any of its services, a member those they created."""
    service = get_visible_service(session, caller, service_id)
    _ensure_can_stop(caller, service)
    service = session.get(RewardService, service_id, with_for_update=True, populate_existing=True)
    assert service is not None
    if service.state not in _STOPPABLE_STATES:
        session.rollback()
        raise Conflict(f"service {service.name!r} is already {service.state}")
    service.stop_requested = True
    set_state(
        session, service, ServiceState.STOPPED if service.state == ServiceState.PENDING else ServiceState.STOPPING
    )
    audit.record(session, "service.stop", caller, team_id=service.team_id, detail=service.name)
    session.commit()
    return service_detail(session, caller, service_id)


def stoppable_ids(session: Session, caller: Caller, service_ids: list[int]) -> set[int]:
    """Of these services, those stop_service would stop for the caller now (the pages' Stop buttons): live,
    not already stopping, and the caller's to stop."""
    services = session.scalars(
        select(RewardService).where(RewardService.id.in_(service_ids), RewardService.state.in_(_STOPPABLE_STATES))
    )
    return {service.id for service in services if _may_stop(caller, service)}


def _may_stop(caller: Caller, service: RewardService) -> bool:
    try:
        _ensure_can_stop(caller, service)
    except Forbidden:
        return False
    return True


def _ensure_can_stop(caller: Caller, service: RewardService) -> None:
    ensure_writer(caller)
    if caller.is_admin:
        return
    role = team_role(caller, service.team_id)
    if role == "admin" or (role == "member" and service.created_by_id == caller.user_id):
        return
    raise Forbidden(f"role {role!r} cannot stop this service; ask an admin of the team")


def _out(session: Session, services: list[RewardService]) -> list[ServiceOut]:
    ids = [s.id for s in services]
    devices: dict[int, list[int]] = {service_id: [] for service_id in ids}
    for service_id, index in session.execute(
        select(Allocation.service_id, Device.index)
        .join(Device, Device.id == Allocation.device_id)
        .where(Allocation.service_id.in_(ids), Allocation.released_at.is_(None))
        .order_by(Allocation.device_id)
    ):
        devices[service_id].append(index)
    creator_ids = {s.created_by_id for s in services if s.created_by_id is not None}
    creators: dict[int, str] = {
        user_id: name
        for user_id, name in session.execute(select(User.id, User.username).where(User.id.in_(creator_ids)))
    }
    using = jobs_using(session, services)
    return [
        ServiceOut(
            id=s.id,
            name=s.name,
            team=s.team.name if s.team else None,
            reward=s.reward,
            path=s.path,
            device_type=s.device_type,
            devices=s.devices,
            state=s.state,
            host=s.host.name if s.host and s.state != ServiceState.PENDING else None,
            device_indices=devices[s.id],
            url=s.url,
            restarts=s.restarts,
            wait_reason=s.wait_reason,
            error=s.error,
            last_health_at=s.last_health_at,
            created_by=creators.get(s.created_by_id) if s.created_by_id is not None else None,
            created_at=s.created_at,
            started_at=s.started_at,
            stopped_at=s.stopped_at,
            figures=figures(s.metrics, s.recent_metrics),
            jobs=using[s.id],
        )
        for s in services
    ]
