"""Offboarding, for server admins: disable (and enable) a user, list and revoke anyone's API tokens.

Disabling revokes the user's tokens and ends their page sessions at once (their session generation moves on);
logins and every later request of theirs are refused while they stay disabled (server.services.auth).
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import ApiToken, User, utcnow
from server.schemas.accounts import TokenList, UserChange, UserOut
from server.services import audit
from server.services.accounts import list_api_tokens, revoke_api_token, revoke_with_children, user_out
from server.services.auth import Caller
from server.services.errors import Conflict, NotFound
from server.services.scoping import ensure_server_admin, ensure_writer


def _user(session: Session, user_id: int) -> User:
    user = session.get(User, user_id)
    if user is None:
        raise NotFound(f"user {user_id} not found")
    return user


def change_user(session: Session, caller: Caller, user_id: int, body: UserChange) -> UserOut:
    """Disable or enable a user. Disabling yourself is refused: someone must be left to enable you."""
    ensure_server_admin(caller)
    ensure_writer(caller)
    user = _user(session, user_id)
    if body.disabled and user.id == caller.user_id:
        raise Conflict("you cannot disable yourself; ask another server admin")
    if body.disabled and user.disabled_at is None:
        user.disabled_at = utcnow()
        user.session_generation += 1
        live = select(ApiToken.id).where(ApiToken.user_id == user.id, ApiToken.revoked_at.is_(None))
        revoke_with_children(session, list(session.scalars(live)))
        audit.record(session, "user.disable", caller, subject_user_id=user.id)
        session.commit()
    elif not body.disabled and user.disabled_at is not None:
        user.disabled_at = None
        audit.record(session, "user.enable", caller, subject_user_id=user.id)
        session.commit()
    return user_out(session, user)


def list_user_tokens(session: Session, caller: Caller, user_id: int) -> TokenList:
    ensure_server_admin(caller)
    return list_api_tokens(session, caller, _user(session, user_id).id)


def revoke_user_token(session: Session, caller: Caller, user_id: int, token_id: int) -> None:
    ensure_server_admin(caller)
    revoke_api_token(session, caller, token_id, _user(session, user_id).id)
