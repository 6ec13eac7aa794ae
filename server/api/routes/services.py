"""Create, list, read and stop reward services; and the check a reward server makes of its callers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response, status
from pydantic import BaseModel

from server.api.deps import CallerDep, ServiceId, SessionDep, SettingsDep, UserCredentials, WriterDep
from server.schemas.common import ErrorBody
from server.schemas.services import ServiceCreate, ServiceOut, ServicePage
from server.services import reward_services, service_callers
from server.services.node_tokens import node_token_key

router = APIRouter(tags=["services"])


class CallerVerdict(BaseModel):
    service_id: int
    allowed: bool


@router.post(
    "/services",
    status_code=status.HTTP_201_CREATED,
    response_model=ServiceOut,
    responses={422: {"model": ErrorBody, "description": "each error names its field"}},
)
def create_service(session: SessionDep, settings: SettingsDep, caller: WriterDep, body: ServiceCreate) -> ServiceOut:
    """A reward server the scheduler places on a host (it holds its devices until stopped) and the worker
    starts, health-checks and restarts. A job of the team scores through it with
    `{"name": "service", "service": NAME}` in its reward list."""
    return reward_services.create_service(session, caller, body, settings)


@router.get("/services", response_model=ServicePage)
def list_services(
    session: SessionDep,
    caller: CallerDep,
    live: Annotated[bool, Query(description="only services that are not stopped or failed")] = False,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> ServicePage:
    return reward_services.list_services(session, caller, live_only=live, limit=limit, offset=offset)


@router.get("/services/{service_id}", response_model=ServiceOut, responses={404: {"model": ErrorBody}})
def get_service(service_id: ServiceId, session: SessionDep, caller: CallerDep) -> ServiceOut:
    return reward_services.service_detail(session, caller, service_id)


@router.post(
    "/services/{service_id}/stop",
    response_model=ServiceOut,
    responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody, "description": "already stopped"}},
)
def stop_service(service_id: ServiceId, session: SessionDep, caller: WriterDep) -> ServiceOut:
    """Pending: stopped at once. Placed: stopping; the worker stops the server and frees its devices."""
    return reward_services.stop_service(session, caller, service_id)


@router.get(
    "/services/{service_id}/caller",
    response_model=CallerVerdict,
    responses={401: {"model": ErrorBody}, 403: {"model": ErrorBody}, 404: {"model": ErrorBody}},
)
def check_caller(
    service_id: ServiceId,
    session: SessionDep,
    settings: SettingsDep,
    credentials: UserCredentials,
    response: Response,
) -> CallerVerdict:
    """For the reward server (`--auth-url`): 200 when the bearer token is a reward token (node 0's, or a node
    token of the other nodes) of a running job of the service's team, or a write-scope token of one of its admins
    or members. A service of another team is a 404, as a missing one is; 403 is for a job token and for the
    service's own team's callers that may not score (a read token, a viewer). `Cache-Control: max-age=N` says
    how many seconds the reward server may keep this yes."""
    trust = service_callers.authorize_caller(
        session,
        service_id,
        credentials.credentials if credentials else None,
        node_token_key(settings.secret_key),
        settings.caller_trust_seconds,
    )
    response.headers["Cache-Control"] = f"private, max-age={trust}"
    return CallerVerdict(service_id=service_id, allowed=True)
