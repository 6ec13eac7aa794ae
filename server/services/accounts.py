"""Managing accounts: a caller's API tokens, users, teams and memberships. Every change commits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.models import ApiToken, Membership, Team, User, utcnow
from server.schemas.accounts import (
    MAX_TOKEN_DAYS,
    MemberAdd,
    MemberList,
    MemberOut,
    PasswordChange,
    TeamCreate,
    TeamList,
    TeamOut,
    TeamRoleOut,
    TokenCreate,
    TokenCreated,
    TokenList,
    TokenOut,
    UserCreate,
    UserList,
    UserOut,
)
from server.services import audit
from server.services.auth import (
    Caller,
    check_password_rules,
    ensure_password_session,
    hash_password,
    password_matches,
)
from server.services.errors import Conflict, FieldErrors, NotFound
from server.services.scoping import (
    ensure_server_admin,
    ensure_team_admin,
    ensure_writer,
    team_role,
    visible_team,
)
from server.services.tokens import USER_TOKEN_PREFIX, hash_token, new_token


def _expiry(body: TokenCreate) -> datetime | None:
    """The request's expiry as naive UTC (the database's convention); refused in the past or too far ahead."""
    if body.expires_at is not None and body.expires_in_days is not None:
        raise FieldErrors.one("expires_at", "give expires_at or expires_in_days, not both")
    now = utcnow()
    if body.expires_in_days is not None:
        return now + timedelta(days=body.expires_in_days)
    if body.expires_at is None:
        return None
    try:
        expires = body.expires_at.astimezone(UTC).replace(tzinfo=None) if body.expires_at.tzinfo else body.expires_at
    except OverflowError:
        raise FieldErrors.one("expires_at", "not a representable time") from None
    if expires <= now:
        raise FieldErrors.one("expires_at", "must be in the future")
    if expires > now + timedelta(days=MAX_TOKEN_DAYS):
        raise FieldErrors.one("expires_at", f"at most {MAX_TOKEN_DAYS} days ahead")
    return expires


def _child_expiry(caller: Caller, expires: datetime | None) -> datetime | None:
    """A token made by a token (directly, or by a page session opened with one) ends no later than it:
    without an expiry it gets the parent's, and a later one is refused."""
    limit = caller.token_expires_at
    if limit is None:
        return expires
    if expires is None:
        return limit
    if expires > limit:
        shown = limit.replace(tzinfo=UTC).isoformat()
        raise FieldErrors.one("expires_at", f"at most the expiry of the token making it ({shown})")
    return expires


def create_api_token(session: Session, caller: Caller, body: TokenCreate) -> TokenCreated:
    """A new token of the caller's; the raw secret is in the answer and nowhere else. A read-only caller gets none,
    so a child token is never wider than its parent; it is revoked with it and expires no later."""
    ensure_writer(caller)
    raw = new_token(USER_TOKEN_PREFIX)
    token = ApiToken(
        user_id=caller.user_id,
        name=body.name.strip() or body.name,
        token_hash=hash_token(raw),
        scope=body.scope,
        expires_at=_child_expiry(caller, _expiry(body)),
        created_at=utcnow(),
        parent_id=caller.token_id,
    )
    session.add(token)
    session.flush()
    detail = f"token {token.id} {token.name!r}, {token.scope}"
    audit.record(session, "token.create", caller, subject_user_id=caller.user_id, detail=detail)
    session.commit()
    return TokenCreated.model_validate({**TokenOut.model_validate(token).model_dump(), "token": raw})


def list_api_tokens(session: Session, caller: Caller, owner_id: int | None = None) -> TokenList:
    """The caller's own tokens (or user `owner_id`'s, checked by the caller), newest first, without any secret."""
    owner = caller.user_id if owner_id is None else owner_id
    rows = session.scalars(select(ApiToken).where(ApiToken.user_id == owner).order_by(ApiToken.id.desc())).all()
    return TokenList(items=[TokenOut.model_validate(t) for t in rows])


def revoke_with_children(session: Session, token_ids: list[int]) -> None:
    """Revoke the tokens and every token made from them, generation by generation (the caller commits)."""
    now = utcnow()
    while token_ids:
        session.execute(
            update(ApiToken)
            .where(ApiToken.id.in_(token_ids), ApiToken.revoked_at.is_(None))
            .values(revoked_at=now)
            .execution_options(synchronize_session=False)
        )
        token_ids = list(session.scalars(select(ApiToken.id).where(ApiToken.parent_id.in_(token_ids))))


def revoke_api_token(session: Session, caller: Caller, token_id: int, owner_id: int | None = None) -> None:
    """Revoke one of the caller's tokens (or, for a server admin, of user `owner_id`) and the tokens made from
    it; again is a no-op. Another user's token is not found."""
    ensure_writer(caller)
    owner = caller.user_id if owner_id is None else owner_id
    token = session.scalar(select(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == owner))
    if token is None:
        raise NotFound(f"token {token_id} not found")
    if token.revoked_at is None:
        revoke_with_children(session, [token.id])
        detail = f"token {token.id} {token.name!r}"
        audit.record(session, "token.revoke", caller, subject_user_id=owner, detail=detail)
        session.commit()


# -- users ---------------------------------------------------------------------------------------------


def user_out(session: Session, user: User) -> UserOut:
    rows = session.execute(
        select(Team.id, Team.name, Membership.role)
        .join(Membership, Membership.team_id == Team.id)
        .where(Membership.user_id == user.id)
        .order_by(Team.id)
    ).all()
    return UserOut(
        id=user.id,
        username=user.username,
        is_admin=user.is_admin,
        has_password=user.password_hash is not None,
        disabled=user.disabled_at is not None,
        created_at=user.created_at,
        teams=[TeamRoleOut(team_id=t, team=name, role=role) for t, name, role in rows],
    )


def list_users(session: Session, caller: Caller) -> UserList:
    ensure_server_admin(caller)
    users = session.scalars(select(User).order_by(User.id)).all()
    return UserList(items=[user_out(session, u) for u in users])


def create_user(session: Session, caller: Caller, body: UserCreate) -> UserOut:
    """A server admin creates a user, optionally with a first team, and with a password only in a session opened
    by password (server.services.auth.ensure_password_session)."""
    ensure_server_admin(caller)
    ensure_writer(caller)
    if body.password is not None:
        ensure_password_session(caller)
    if session.scalar(select(User.id).where(User.username == body.username)) is not None:
        raise Conflict(f"user {body.username!r} exists already")
    if body.team_id is not None and session.get(Team, body.team_id) is None:
        raise FieldErrors.one("team_id", f"team {body.team_id} not found")
    password_hash = hash_password(body.password) if body.password is not None else None
    user = User(username=body.username, password_hash=password_hash, is_admin=body.is_admin, created_at=utcnow())
    session.add(user)
    try:
        session.flush()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"user {body.username!r} exists already") from None
    facts = [("server admin", body.is_admin), ("with a password", password_hash is not None)]
    detail = ", ".join(fact for fact, holds in facts if holds) or None
    audit.record(session, "user.create", caller, subject_user_id=user.id, detail=detail)
    if body.team_id is not None:
        session.add(Membership(user_id=user.id, team_id=body.team_id, role=body.role))
        audit.record(session, "member.add", caller, team_id=body.team_id, subject_user_id=user.id, detail=body.role)
    session.commit()
    return user_out(session, user)


def change_password(session: Session, caller: Caller, body: PasswordChange) -> None:
    """The caller's own password, in a session opened by password and with the current one: a first password is
    set by a setup link (server.services.password_setup). Ends the user's page sessions."""
    ensure_password_session(caller)
    ensure_writer(caller)
    user = session.get_one(User, caller.user_id)
    if not body.current_password:
        raise FieldErrors.one("current_password", "required: your current password")
    if not password_matches(user, body.current_password):
        raise FieldErrors.one("current_password", "wrong password")
    check_password_rules(body.new_password, "new_password")
    user.password_hash = hash_password(body.new_password)
    user.session_generation += 1  # other page sessions of the user end
    audit.record(session, "user.password", caller, subject_user_id=user.id)
    session.commit()


# -- teams and members ---------------------------------------------------------------------------------


def list_teams(session: Session, caller: Caller) -> TeamList:
    """The caller's teams with their role; a server admin sees every team."""
    stmt = select(Team).order_by(Team.id)
    if not caller.is_admin:
        stmt = stmt.where(Team.id.in_(caller.team_ids))
    teams = session.scalars(stmt).all()
    items = [TeamOut(id=t.id, name=t.name, role=team_role(caller, t.id), created_at=t.created_at) for t in teams]
    return TeamList(items=items)


def create_team(session: Session, caller: Caller, body: TeamCreate) -> TeamOut:
    ensure_server_admin(caller)
    ensure_writer(caller)
    if session.scalar(select(Team.id).where(Team.name == body.name)) is not None:
        raise Conflict(f"team {body.name!r} exists already")
    team = Team(name=body.name, created_at=utcnow())
    session.add(team)
    session.flush()
    audit.record(session, "team.create", caller, team_id=team.id, detail=team.name)
    session.commit()
    return TeamOut(id=team.id, name=team.name, role=None, created_at=team.created_at)


def list_members(session: Session, caller: Caller, team_id: int) -> MemberList:
    """Any member of the team may see who else is in it."""
    visible_team(session, caller, team_id)
    rows = session.execute(
        select(User.id, User.username, Membership.role)
        .join(Membership, Membership.user_id == User.id)
        .where(Membership.team_id == team_id)
        .order_by(User.username)
    ).all()
    return MemberList(items=[MemberOut(user_id=uid, username=name, role=role) for uid, name, role in rows])


def _membership(session: Session, team_id: int, user_id: int) -> Membership:
    membership = session.scalar(select(Membership).where(Membership.team_id == team_id, Membership.user_id == user_id))
    if membership is None:
        raise NotFound(f"user {user_id} is not a member of team {team_id}")
    return membership


def _keep_an_admin(session: Session, membership: Membership) -> None:
    """A team never loses its last admin: someone must be able to manage it."""
    if membership.role != "admin":
        return
    admins = session.scalar(
        select(func.count())
        .select_from(Membership)
        .where(Membership.team_id == membership.team_id, Membership.role == "admin")
    )
    if (admins or 0) <= 1:
        raise Conflict("this is the team's last admin; make another member admin first")


def add_member(session: Session, caller: Caller, team_id: int, body: MemberAdd) -> MemberOut:
    ensure_writer(caller)
    ensure_team_admin(session, caller, team_id)
    user = session.scalar(select(User).where(User.username == body.username))
    if user is None:
        raise FieldErrors.one("username", f"no user {body.username!r}")
    exists = session.scalar(select(Membership.id).where(Membership.team_id == team_id, Membership.user_id == user.id))
    if exists is not None:
        raise Conflict(f"{user.username!r} is in the team already; change the role instead")
    session.add(Membership(user_id=user.id, team_id=team_id, role=body.role))
    audit.record(session, "member.add", caller, team_id=team_id, subject_user_id=user.id, detail=body.role)
    try:
        session.commit()
    except IntegrityError:
        session.rollback()
        raise Conflict(f"{user.username!r} is in the team already") from None
    return MemberOut(user_id=user.id, username=user.username, role=body.role)


def set_member_role(session: Session, caller: Caller, team_id: int, user_id: int, role: str) -> MemberOut:
    ensure_writer(caller)
    ensure_team_admin(session, caller, team_id)
    membership = _membership(session, team_id, user_id)
    if membership.role != role:
        if role != "admin":
            _keep_an_admin(session, membership)
        detail = f"{membership.role} -> {role}"
        membership.role = role
        audit.record(session, "member.role", caller, team_id=team_id, subject_user_id=user_id, detail=detail)
        session.commit()
    return MemberOut(user_id=user_id, username=membership.user.username, role=membership.role)


def remove_member(session: Session, caller: Caller, team_id: int, user_id: int) -> None:
    ensure_writer(caller)
    ensure_team_admin(session, caller, team_id)
    membership = _membership(session, team_id, user_id)
    _keep_an_admin(session, membership)
    session.delete(membership)
    audit.record(session, "member.remove", caller, team_id=team_id, subject_user_id=user_id, detail=membership.role)
    session.commit()
