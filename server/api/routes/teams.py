"""Teams and their members: admins of a team manage its members; server admins create teams."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from server.api.deps import CallerDep, SessionDep, WriterDep
from server.schemas.accounts import MemberAdd, MemberList, MemberOut, MemberRole, TeamCreate, TeamList, TeamOut
from server.schemas.common import MAX_INT32, ErrorBody
from server.services import accounts

router = APIRouter(
    tags=["teams"],
    responses={
        403: {"model": ErrorBody, "description": "not an admin of the team"},
        404: {"model": ErrorBody, "description": "no such team, or not one of the caller's"},
    },
)

TeamId = Annotated[int, Path(ge=1, le=MAX_INT32, description="team id")]
UserId = Annotated[int, Path(ge=1, le=MAX_INT32, description="user id")]


@router.get("/teams", response_model=TeamList)
def list_teams(session: SessionDep, caller: CallerDep) -> TeamList:
    """The caller's teams and role in each (server admins: every team)."""
    return accounts.list_teams(session, caller)


@router.post(
    "/teams", status_code=status.HTTP_201_CREATED, response_model=TeamOut, responses={409: {"model": ErrorBody}}
)
def create_team(body: TeamCreate, session: SessionDep, caller: WriterDep) -> TeamOut:
    return accounts.create_team(session, caller, body)


@router.get("/teams/{team_id}/members", response_model=MemberList)
def list_members(team_id: TeamId, session: SessionDep, caller: CallerDep) -> MemberList:
    return accounts.list_members(session, caller, team_id)


@router.post(
    "/teams/{team_id}/members",
    status_code=status.HTTP_201_CREATED,
    response_model=MemberOut,
    responses={409: {"model": ErrorBody}},
)
def add_member(team_id: TeamId, body: MemberAdd, session: SessionDep, caller: WriterDep) -> MemberOut:
    return accounts.add_member(session, caller, team_id, body)


@router.patch(
    "/teams/{team_id}/members/{user_id}",
    response_model=MemberOut,
    responses={409: {"model": ErrorBody, "description": "would leave the team without an admin"}},
)
def set_member_role(
    team_id: TeamId, user_id: UserId, body: MemberRole, session: SessionDep, caller: WriterDep
) -> MemberOut:
    return accounts.set_member_role(session, caller, team_id, user_id, body.role)


@router.delete(
    "/teams/{team_id}/members/{user_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses={409: {"model": ErrorBody, "description": "would leave the team without an admin"}},
)
def remove_member(team_id: TeamId, user_id: UserId, session: SessionDep, caller: WriterDep) -> Response:
    accounts.remove_member(session, caller, team_id, user_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
