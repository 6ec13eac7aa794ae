"""API tokens, users, teams, memberships and audit events as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from server.schemas.common import MAX_INT32, ReadModel, UtcDatetime

TokenScope = Literal["read", "write"]
Role = Literal["viewer", "member", "admin"]
MAX_TOKEN_DAYS = 3650


class TokenCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(
        min_length=1,
        max_length=100,
        pattern=r"^[^\x00-\x1f\x7f]+$",
        description="what the token is for, e.g. ci-nightly",
    )
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
    parent_id: int | None = Field(description="the token that made this one; revoking it revokes this one")
    created_at: UtcDatetime
    expires_at: UtcDatetime | None
    revoked_at: UtcDatetime | None
    last_used_at: UtcDatetime | None


class TokenCreated(TokenOut):
    token: str = Field(description="the secret: shown in this answer only, stored nowhere but as a hash")


class TokenList(BaseModel):
    items: list[TokenOut]


class TeamRoleOut(BaseModel):
    team_id: int
    team: str
    role: str


class UserOut(BaseModel):
    id: int
    username: str
    is_admin: bool
    has_password: bool
    disabled: bool = Field(description="disabled by a server admin: no login, no token, no session")
    created_at: UtcDatetime
    teams: list[TeamRoleOut]


class UserChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    disabled: bool = Field(description="true: offboard the user (their tokens are revoked, sessions end)")


class UserList(BaseModel):
    items: list[UserOut]


Username = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@-]*$")]
TeamName = Annotated[str, Field(min_length=1, max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")]


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: Username
    password: str | None = Field(
        None,
        description="8 to 256 characters, set only in a page session opened by password (403 with a token); "
        "without one, the user logs in by token only",
    )
    is_admin: bool = Field(False, description="server admin: every team, users and teams")
    team_id: int | None = Field(None, ge=1, le=MAX_INT32, description="a team to put the user in")
    role: Role = "member"


class PasswordChange(BaseModel):
    model_config = ConfigDict(extra="forbid")

    current_password: str = Field(
        "", max_length=256, description="your current password (required; a first password comes from a setup link)"
    )
    new_password: str = Field(max_length=256)


class TeamCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: TeamName


class TeamOut(BaseModel):
    id: int
    name: str
    role: str | None = Field(description="the caller's role in it (none: a server admin outside it)")
    created_at: UtcDatetime


class TeamList(BaseModel):
    items: list[TeamOut]


class MemberAdd(BaseModel):
    model_config = ConfigDict(extra="forbid")

    username: Username
    role: Role = "member"


class MemberRole(BaseModel):
    model_config = ConfigDict(extra="forbid")

    role: Role


class MemberOut(BaseModel):
    user_id: int
    username: str
    role: str


class MemberList(BaseModel):
    items: list[MemberOut]


class AuditEventOut(BaseModel):
    id: int
    created_at: UtcDatetime
    action: str
    actor: str
    team_id: int | None
    job_id: int | None
    subject: str | None = Field(description="the user the action concerned (tokens, roles, passwords)")
    detail: str | None


class AuditPage(BaseModel):
    items: list[AuditEventOut]
    total: int
