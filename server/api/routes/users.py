"""Who am I; the caller's password; users (server admins create and list them)."""

from __future__ import annotations

from fastapi import APIRouter, Response, status

from server.api.deps import CallerDep, SessionDep, WriterDep
from server.models import User
from server.schemas.accounts import PasswordChange, UserCreate, UserList, UserOut
from server.schemas.common import ErrorBody
from server.services import accounts

router = APIRouter(tags=["users"], responses={403: {"model": ErrorBody, "description": "not allowed to the caller"}})


@router.get("/users/me", response_model=UserOut)
def me(session: SessionDep, caller: CallerDep) -> UserOut:
    """The caller: name, server-admin flag, teams and roles."""
    return accounts.user_out(session, session.get_one(User, caller.user_id))


@router.post("/users/me/password", status_code=status.HTTP_204_NO_CONTENT, response_class=Response)
def change_password(body: PasswordChange, session: SessionDep, caller: WriterDep) -> Response:
    accounts.change_password(session, caller, body)
    return Response(status_code=status.HTTP_204_NO_CONTENT)


@router.get("/users", response_model=UserList)
def list_users(session: SessionDep, caller: CallerDep) -> UserList:
    """Every user (server admins only)."""
    return accounts.list_users(session, caller)


@router.post(
    "/users", status_code=status.HTTP_201_CREATED, response_model=UserOut, responses={409: {"model": ErrorBody}}
)
def create_user(body: UserCreate, session: SessionDep, caller: WriterDep) -> UserOut:
    """A new user, optionally with a password and a first team (server admins only)."""
    return accounts.create_user(session, caller, body)
