"""Who is calling: user API tokens (hashed), passwords (argon2), the bootstrap admin, and per-job trainer tokens."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import DateTime, Integer, Row, String, bindparam, select, text
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import ApiToken, AuditEvent, Job, JobAttempt, JobStatus, Membership, Team, User, utcnow
from server.services.errors import AttemptSuperseded, FieldErrors, Forbidden, Unauthorized
from server.services.password_pool import in_hashing_pool
from server.services.sql_text import column_types, select_text
from server.services.tokens import USER_TOKEN_PREFIX, hash_token, new_token

log = logging.getLogger(__name__)

ADMIN_USERNAME = "admin"
DEFAULT_TEAM = "default"
# last_used_at is written at most this often per token, so busy scripts do not turn reads into writes.
LAST_USED_RESOLUTION = timedelta(seconds=60)
MIN_PASSWORD = 8
MAX_PASSWORD = 256  # argon2 hashes all of it; a megabyte "password" would be a cheap way to burn CPU

_hasher = PasswordHasher()
# Verified against when the username is unknown, so a login takes as long whether or not the user exists.
_DUMMY_HASH = _hasher.hash("not a password anyone has")


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
    # The API token the caller came with (directly, or through a page session opened with it): tokens it
    # makes are its children, and the session ends with it. None: a password session.
    token_id: int | None = None
    token_expires_at: datetime | None = None

    @property
    def team_ids(self) -> tuple[int, ...]:
        return tuple(t.team_id for t in self.teams)


def _teams(rows: Sequence[Row[Any]]) -> tuple[TeamRole, ...]:
    """The (team_id, team_name, role) tail of the caller statements' rows; no team: one row of NULLs."""
    return tuple(TeamRole(team_id, name, role) for *_, team_id, name, role in rows if team_id is not None)


# The statements every request runs, written once so that no request pays for building them (about a
# millisecond of CPU for the ORM's version on a 2-core machine). A row per team, NULLs for a user in none.
_WITH_TEAMS = "LEFT JOIN memberships m ON m.user_id = u.id LEFT JOIN teams tm ON tm.id = m.team_id "
_TEAM_COLUMNS = {"team_id": Integer, "team_name": String, "role": String}
_USER_COLUMNS = column_types(User.__table__, "username", "is_admin", "disabled_at")
_SESSION_TOKEN_FIELDS = ("id", "scope", "revoked_at", "expires_at")
# A page session's user, and the token that opened it when one did (NULLs otherwise, or when it is not theirs).
_SESSION_CALLER = select_text(
    "SELECT u.username, u.is_admin, u.disabled_at, u.session_generation, "
    f"{', '.join(f't.{name} AS token_{name}' for name in _SESSION_TOKEN_FIELDS)}, "
    "tm.id AS team_id, tm.name AS team_name, m.role "
    "FROM users u LEFT JOIN api_tokens t ON t.id = :token_id AND t.user_id = u.id "
    f"{_WITH_TEAMS}WHERE u.id = :user_id ORDER BY tm.id",
    **_USER_COLUMNS
    | column_types(User.__table__, "session_generation")
    | {f"token_{name}": ApiToken.__table__.c[name].type for name in _SESSION_TOKEN_FIELDS}
    | _TEAM_COLUMNS,
)
_TOKEN_FIELDS = ("id", "user_id", "scope", "revoked_at", "expires_at", "last_used_at")
_TOKEN_CALLER = select_text(
    f"SELECT {', '.join(f't.{name}' for name in _TOKEN_FIELDS)}, u.username, u.is_admin, u.disabled_at, "
    "tm.id AS team_id, tm.name AS team_name, m.role "
    f"FROM api_tokens t JOIN users u ON u.id = t.user_id {_WITH_TEAMS}WHERE t.token_hash = :token_hash ORDER BY tm.id",
    **column_types(ApiToken.__table__, *_TOKEN_FIELDS) | _USER_COLUMNS | _TEAM_COLUMNS,
)
_TOKEN_USED = text("UPDATE api_tokens SET last_used_at = :now WHERE id = :token_id").bindparams(
    bindparam("now", type_=DateTime)
)


def caller_of_page_session(
    session: Session, user_id: int, *, can_write: bool, generation: int, token_id: int | None
) -> Caller | None:
    """The Caller of a page session in one statement; None once the session has ended: the user is gone or
    disabled, logged out everywhere or changed password since (`generation`), or the token that opened the
    session (`token_id`) was revoked or expired."""
    rows = session.execute(_SESSION_CALLER, {"user_id": user_id, "token_id": token_id}).all()
    if not rows:
        return None
    username, is_admin, disabled_at, current_generation, t_id, scope, revoked_at, expires_at = rows[0][:8]
    if disabled_at is not None or (current_generation or 0) != generation:
        return None
    if token_id is not None:
        if t_id is None or revoked_at is not None or (expires_at is not None and expires_at <= utcnow()):
            return None
        can_write = can_write and scope != "read"
    return Caller(user_id, username, is_admin, _teams(rows), can_write, token_id, expires_at)


def authenticate_api_token(session: Session, raw: str) -> Caller:
    """A user API token → its Caller; unknown, revoked or expired → Unauthorized. Commits last_used_at.

    One round trip on every API call: the token, its user and the user's teams (a row per team) together."""
    rows = session.execute(_TOKEN_CALLER, {"token_hash": hash_token(raw)}).all()
    now = utcnow()
    if not rows:
        raise Unauthorized("invalid token")
    token_id, user_id, scope, revoked_at, expires_at, last_used_at, username, is_admin, disabled_at = rows[0][:9]
    if revoked_at is not None:
        raise Unauthorized("token revoked")
    if expires_at is not None and expires_at <= now:
        raise Unauthorized("token expired")
    if disabled_at is not None:
        raise Unauthorized("this user is disabled")
    if last_used_at is None or now - last_used_at >= LAST_USED_RESOLUTION:
        session.execute(_TOKEN_USED, {"now": now, "token_id": token_id})
        session.commit()
    return Caller(user_id, username, is_admin, _teams(rows), scope != "read", token_id, expires_at)


def ensure_password_session(caller: Caller) -> None:
    """Passwords are set only by a caller who logged in with one (or by a setup link, which is not a Caller):
    a token, however short-lived, never turns into a lasting credential, and neither does a session opened
    with one."""
    if caller.token_id is not None:
        raise Forbidden(
            "passwords are set only in a page session opened with a password (or a setup link), never with a token"
        )


def check_password_rules(password: str, field: str = "password") -> None:
    if not MIN_PASSWORD <= len(password) <= MAX_PASSWORD:
        raise FieldErrors.one(field, f"a password has {MIN_PASSWORD} to {MAX_PASSWORD} characters")


def hash_password(password: str) -> str:
    check_password_rules(password)
    return in_hashing_pool(lambda: _hasher.hash(password))


def _verify(stored: str | None, password: str) -> bool:
    """argon2 verification (in the hashing pool); without a stored hash it does the same work against a dummy
    and says no."""

    def verify() -> bool:
        try:
            return _hasher.verify(stored or _DUMMY_HASH, password)
        except (VerificationError, InvalidHashError):
            return False

    return in_hashing_pool(verify) and stored is not None


def password_matches(user: User, password: str) -> bool:
    """Does the user's password match? An outdated hash is upgraded in place (the caller commits)."""
    if len(password) > MAX_PASSWORD or not _verify(user.password_hash, password):
        return False
    if user.password_hash and _hasher.check_needs_rehash(user.password_hash):
        user.password_hash = in_hashing_pool(lambda: _hasher.hash(password))
    return True


def authenticate_password(session: Session, username: str, password: str) -> User | None:
    """The user whose password matches, else None, in the same time for unknown or disabled users. Commits a
    rehash."""
    user = session.scalar(select(User).where(User.username == username.strip()))
    if user is None:
        _verify(None, password)
        return None
    if not password_matches(user, password) or user.disabled_at is not None:
        return None
    session.commit()
    return user


def authenticate_job_token(session: Session, raw: str, job_id: int) -> Job:
    """A trainer's token → the one job it may write. Another job's token → 403; a finished job's → 401; the token of
    an attempt the job has left behind (sent back to the queue, started again) → 409 AttemptSuperseded, so that
    its reporter stops."""
    digest = hash_token(raw)
    holder = session.scalar(select(Job).where(Job.token_hash == digest))
    if holder is None:
        _refuse_past_attempt(session, digest, job_id)
        raise Unauthorized("invalid job token (unknown, or its job has finished)")
    if holder.id != job_id:
        raise Forbidden(f"this token writes to job {holder.id} only")
    return holder


def running_job_of_token(session: Session, raw: str) -> Job:
    """The job a trainer's token belongs to, for the reads a job may make beyond its own (its team's artifacts)."""
    holder = session.scalar(select(Job).where(Job.token_hash == hash_token(raw)))
    if holder is None:
        raise Unauthorized("invalid job token (unknown, or its job has finished)")
    return holder


def _refuse_past_attempt(session: Session, digest: str, job_id: int) -> None:
    """AttemptSuperseded when `digest` is the token of an attempt of `job_id` that is over while the job goes on."""
    past = session.execute(
        select(JobAttempt.attempt, Job.attempt, Job.status)
        .join(Job, Job.id == JobAttempt.job_id)
        .where(JobAttempt.token_hash == digest, JobAttempt.job_id == job_id)
    ).first()
    if past is not None and (past[0] < past[1] or past[2] == JobStatus.QUEUED):
        raise AttemptSuperseded(job_id, past[0], past[1])


def _start_event(action: str, actor_name: str, admin: User, detail: str) -> AuditEvent:
    """An audit event of the first start's credentials (services.audit imports this module, so it is built here)."""
    return AuditEvent(action=action, actor_name=actor_name, subject_user_id=admin.id, detail=detail)


def ensure_admin(session: Session, settings: Settings) -> str | None:
    """First start: create user `admin` (server admin), team `default` and an API token.

    Returns the raw token, which exists nowhere else, so the caller prints it once; None when
    the admin already existed or SFUMATO_ADMIN_TOKEN supplies the token (it is stored hashed
    and accepted from then on). SFUMATO_ADMIN_PASSWORD, when set, becomes the admin's password
    at every start (so it also recovers a lost one). Commits. Safe when two processes start at once.
    """
    if settings.admin_password is not None:
        check_password_rules(settings.admin_password, "SFUMATO_ADMIN_PASSWORD")
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
                session.add(_start_event("token.create", "first start", admin, "'bootstrap', printed once"))
        if settings.admin_token:
            digest = hash_token(settings.admin_token)
            if session.scalar(select(ApiToken.id).where(ApiToken.token_hash == digest)) is None:
                session.add(ApiToken(user_id=admin.id, name="SFUMATO_ADMIN_TOKEN", token_hash=digest))
                session.add(_start_event("token.create", "SFUMATO_ADMIN_TOKEN", admin, "accepted from the environment"))
        if settings.admin_password is not None and not password_matches(admin, settings.admin_password):
            admin.password_hash = hash_password(settings.admin_password)
            admin.session_generation = (admin.session_generation or 0) + 1
            detail = "set from the environment at start"
            session.add(_start_event("user.password", "SFUMATO_ADMIN_PASSWORD", admin, detail))
        session.commit()
    except IntegrityError:
        session.rollback()
        log.info("another process created the admin at the same time; keeping theirs")
        return None
    return raw
