"""Who is calling: user API tokens (hashed), the bootstrap admin, and per-job trainer tokens."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import ApiToken, Job, Membership, Team, User, utcnow
from server.services.errors import Forbidden, Unauthorized
from server.services.tokens import USER_TOKEN_PREFIX, hash_token, new_token

log = logging.getLogger(__name__)

ADMIN_USERNAME = "admin"
DEFAULT_TEAM = "default"
# last_used_at is written at most this often per token, so busy scripts do not turn reads into writes.
LAST_USED_RESOLUTION = timedelta(seconds=60)


@dataclass(frozen=True)
class TeamRole:
    team_id: int
    team_name: str
    role: str


@dataclass(frozen=True)
class Caller:
    """An authenticated user as the services see it: identity, server-admin flag, teams and token scope."""

    user_id: int
    username: str
    is_admin: bool
    teams: tuple[TeamRole, ...]
    can_write: bool = True

    @property
    def team_ids(self) -> tuple[int, ...]:
        return tuple(t.team_id for t in self.teams)


def caller_for_user(session: Session, user: User, *, can_write: bool = True) -> Caller:
    """Build a Caller for a user found some other way (a web session cookie, the CLI)."""
    rows = session.execute(
        select(Team.id, Team.name, Membership.role)
        .join(Membership, Membership.team_id == Team.id)
        .where(Membership.user_id == user.id)
        .order_by(Team.id)
    ).all()
    teams = tuple(TeamRole(team_id, name, role) for team_id, name, role in rows)
    return Caller(user.id, user.username, user.is_admin, teams, can_write)


def authenticate_api_token(session: Session, raw: str) -> Caller:
    """A user API token → its Caller; unknown, revoked or expired → Unauthorized. Commits last_used_at."""
    token = session.scalar(select(ApiToken).where(ApiToken.token_hash == hash_token(raw)))
    now = utcnow()
    if token is None:
        raise Unauthorized("invalid token")
    if token.revoked_at is not None:
        raise Unauthorized("token revoked")
    if token.expires_at is not None and token.expires_at <= now:
        raise Unauthorized("token expired")
    if token.last_used_at is None or now - token.last_used_at >= LAST_USED_RESOLUTION:
        token.last_used_at = now
        session.commit()
    return caller_for_user(session, token.user, can_write=token.scope != "read")


def authenticate_job_token(session: Session, raw: str, job_id: int) -> Job:
    """A trainer's token → the one job it may write. Another job's token → 403; a finished job's → 401."""
    digest = hash_token(raw)
    holder = session.scalar(select(Job).where(Job.token_hash == digest))
    if holder is None:
        raise Unauthorized("invalid job token (unknown, or its job has finished)")
    if holder.id != job_id:
        raise Forbidden(f"this token writes to job {holder.id} only")
    return holder


def ensure_admin(session: Session, settings: Settings) -> str | None:
    """First start: create user `admin` (server admin), team `default` and an API token.

    Returns the raw token, which exists nowhere else, so the caller prints it once; None when
    the admin already existed or SFUMATO_ADMIN_TOKEN supplies the token (it is stored hashed
    and accepted from then on). Commits. Safe when two processes start at once.
    """
    raw: str | None = None
    try:
        admin = session.scalar(select(User).where(User.username == ADMIN_USERNAME))
        if admin is None:
            admin = User(username=ADMIN_USERNAME, is_admin=True)
            team = session.scalar(select(Team).where(Team.name == DEFAULT_TEAM)) or Team(name=DEFAULT_TEAM)
            session.add_all([admin, team])
            session.flush()
            session.add(Membership(user_id=admin.id, team_id=team.id, role="admin"))
            if not settings.admin_token:
                raw = new_token(USER_TOKEN_PREFIX)
                session.add(ApiToken(user_id=admin.id, name="bootstrap", token_hash=hash_token(raw)))
        if settings.admin_token:
            digest = hash_token(settings.admin_token)
            if session.scalar(select(ApiToken.id).where(ApiToken.token_hash == digest)) is None:
                session.add(ApiToken(user_id=admin.id, name="SFUMATO_ADMIN_TOKEN", token_hash=digest))
        session.commit()
    except IntegrityError:
        session.rollback()
        log.info("another process created the admin at the same time; keeping theirs")
        return None
    return raw
