"""API tokens, users, teams, memberships and audit events as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from server.schemas.common import ReadModel, UtcDatetime

TokenScope = Literal["read", "write"]
Role = Literal["viewer", "member", "admin"]
MAX_TOKEN_DAYS = 3650


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100, description="what the token is for, e.g. ci-nightly")
    scope: TokenScope = Field("write", description="read (look only) or write (submit, cancel, ...)")
    expires_at: datetime | None = Field(None, description="when it stops working (UTC when no offset is given)")
    expires_in_days: int | None = Field(
        None,
        ge=1,
        le=MAX_TOKEN_DAYS,
        validation_alias=AliasChoices("expires_in_days", "expires_days"),
        description="or: stop working this many days from now",
    )


class TokenOut(ReadModel):
    id: int
    name: str
    scope: str
    created_at: UtcDatetime
    expires_at: UtcDatetime | None
    revoked_at: UtcDatetime | None
    last_used_at: UtcDatetime | None


class TokenCreated(TokenOut):
    token: str = Field(description="the secret: shown in this answer only, stored nowhere but as a hash")


class TokenList(BaseModel):
    items: list[TokenOut]
