"""Who am I; the caller's password; users (server admins create, list and disable them, and see and revoke
their tokens)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from server.api.deps import CallerDep, SessionDep, WriterDep
from server.models import User
from server.schemas.accounts import PasswordChange, TokenList, UserChange, UserCreate, UserList, UserOut
from server.schemas.common import MAX_INT32, ErrorBody
from server.services import accounts, offboarding

UserId = Annotated[int, Path(ge=1, le=MAX_INT32, description="the user's id")]
TokenId = Annotated[int, Path(ge=1, le=MAX_INT32, description="the token's id")]

router = APIRouter(tags=["users"], responses={403: {"model": ErrorBody, "description": "not allowed to the caller"}})


@router.get("/users/me", response_model=UserOut)
def me(session: SessionDep, caller: CallerDep) -> UserOut:
    """The caller: name, server-admin flag, teams and roles."""
    return accounts.user_out(session, session.get_one(User, caller.user_id))


@router.post("/users/me/password", status_code=status.HTTP_204_NO_CONTENT, response_class=Response)
def change_password(body: PasswordChange, session: SessionDep, caller: WriterDep) -> Response:
    """403 to every token (a token must not turn into a lasting credential): a password is changed, with the
    current one, on the Settings page of a session opened by password; a first one comes from the one-time
    setup link the server prints."""
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


@router.patch(
    "/users/{user_id}",
    response_model=UserOut,
    responses={404: {"model": ErrorBody}, 409: {"model": ErrorBody}},
)
def change_user(user_id: UserId, body: UserChange, session: SessionDep, caller: WriterDep) -> UserOut:
    """`{"disabled": true}` offboards a user: their tokens are revoked and their sessions end at once
    (server admins only)."""
    return offboarding.change_user(session, caller, user_id, body)


@router.get("/users/{user_id}/tokens", response_model=TokenList, responses={404: {"model": ErrorBody}})
def list_user_tokens(user_id: UserId, session: SessionDep, caller: CallerDep) -> TokenList:
    """A user's API tokens, without secrets (server admins only)."""
    return offboarding.list_user_tokens(session, caller, user_id)


@router.delete(
    "/users/{user_id}/tokens/{token_id}",
    status_code=status.HTTP_204_NO_CONTENT,
    response_class=Response,
    responses={404: {"model": ErrorBody}},
)
def revoke_user_token(user_id: UserId, token_id: TokenId, session: SessionDep, caller: WriterDep) -> Response:
    """Revoke a user's token and the tokens made from it (server admins only)."""
    offboarding.revoke_user_token(session, caller, user_id, token_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
