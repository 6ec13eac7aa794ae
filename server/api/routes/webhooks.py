"""A team's webhooks: create, list, delete, their delivery history, and a test delivery queued for the workers."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from server.api.deps import CallerDep, SessionDep, SettingsDep, WriterDep
from server.api.routes.teams import TeamId
from server.schemas.common import MAX_INT32, ErrorBody
from server.schemas.webhooks import DeliveryList, TestQueued, WebhookCreate, WebhookCreated, WebhookList
from server.services import webhooks

router = APIRouter(
    tags=["webhooks"],
    responses={
        403: {"model": ErrorBody, "description": "not an admin of the team, or a read-only token"},
        404: {"model": ErrorBody, "description": "no such team or webhook, or not one of the caller's"},
    },
)

WebhookId = Annotated[int, Path(ge=1, le=MAX_INT32, description="webhook id")]


@router.get("/teams/{team_id}/webhooks", response_model=WebhookList)
def list_webhooks(team_id: TeamId, session: SessionDep, caller: CallerDep) -> WebhookList:
    """The team's webhooks (any member); secrets are never shown again."""
    return webhooks.list_webhooks(session, caller, team_id)


@router.post(
    "/teams/{team_id}/webhooks",
    status_code=status.HTTP_201_CREATED,
    response_model=WebhookCreated,
    responses={422: {"model": ErrorBody, "description": "a URL the platform may not call, naming `url`"}},
)
def create_webhook(
    team_id: TeamId, body: WebhookCreate, session: SessionDep, settings: SettingsDep, caller: WriterDep
) -> WebhookCreated:
    """A webhook for the team's job and experiment ends (team admins); the answer holds its signing secret."""
    return webhooks.create_webhook(session, caller, settings, team_id, body)


@router.delete(
    "/teams/{team_id}/webhooks/{webhook_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response
)
def delete_webhook(team_id: TeamId, webhook_id: WebhookId, session: SessionDep, caller: WriterDep) -> Response:
    webhooks.delete_webhook(session, caller, team_id, webhook_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/teams/{team_id}/webhooks/{webhook_id}/deliveries", response_model=DeliveryList)
def list_deliveries(team_id: TeamId, webhook_id: WebhookId, session: SessionDep, caller: CallerDep) -> DeliveryList:
    """The latest deliveries, newest first, with every attempt: time, status code or error."""
    return webhooks.list_deliveries(session, caller, team_id, webhook_id)


@router.post(
    "/teams/{team_id}/webhooks/{webhook_id}/test", status_code=status.HTTP_202_ACCEPTED, response_model=TestQueued
)
def send_test(team_id: TeamId, webhook_id: WebhookId, session: SessionDep, caller: WriterDep) -> TestQueued:
    """Queue a `test` delivery (team admins); a worker makes it, and its attempts appear in the deliveries."""
    return TestQueued(delivery_id=webhooks.queue_test_delivery(session, caller, team_id, webhook_id))
