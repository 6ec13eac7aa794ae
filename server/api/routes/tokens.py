"""The caller's own API tokens: create (the secret is shown once), list, revoke."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Response, status

from server.api.deps import CallerDep, SessionDep, WriterDep
from server.schemas.accounts import TokenCreate, TokenCreated, TokenList
from server.schemas.common import MAX_INT32, ErrorBody
from server.services import accounts

TokenId = Annotated[int, Path(ge=1, le=MAX_INT32, description="the token's id")]

router = APIRouter(tags=["tokens"], responses={404: {"model": ErrorBody}})


@router.post("/tokens", status_code=status.HTTP_201_CREATED, response_model=TokenCreated)
def create_token(body: TokenCreate, session: SessionDep, caller: WriterDep) -> TokenCreated:
    """A new token for the caller; `token` (the secret) is in this answer only."""
    return accounts.create_api_token(session, caller, body)


@router.get("/tokens", response_model=TokenList)
def list_tokens(session: SessionDep, caller: CallerDep) -> TokenList:
    return accounts.list_api_tokens(session, caller)


@router.delete("/tokens/{token_id}", status_code=status.HTTP_204_NO_CONTENT, response_class=Response)
def revoke_token(token_id: TokenId, session: SessionDep, caller: WriterDep) -> Response:
    accounts.revoke_api_token(session, caller, token_id)
    return Response(status_code=status.HTTP_204_NO_CONTENT)
