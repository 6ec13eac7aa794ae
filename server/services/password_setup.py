"""One-time setup links: how a user without a password gets a first one, never through a token.

A link names the user and their session generation, is signed with the server's secret key and expires after
SETUP_LINK_HOURS. Setting the password moves the generation on (in one conditional UPDATE), so a link works
once, and every older link of the user stops working with it. The server prints one at start for the admin
while the admin has no password (`first_password_link`); nothing on the API makes one.
"""

from __future__ import annotations

from itsdangerous import BadSignature, URLSafeTimedSerializer
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from server.models import User
from server.services import audit
from server.services.auth import ADMIN_USERNAME, check_password_rules, hash_password
from server.services.errors import ServiceError

SETUP_PATH = "/setup-password"
SETUP_LINK_HOURS = 24
_SALT = "sfumato-password-setup"


class SetupLinkInvalid(ServiceError):
    """The link is forged, expired, used, or its user has a password by now, or is disabled or gone."""

    def __init__(self) -> None:
        super().__init__(
            "this setup link is invalid, expired or used: restart the server for a new one, or log in with your "
            "password"
        )


def _serializer(secret_key: str) -> URLSafeTimedSerializer:
    return URLSafeTimedSerializer(secret_key, salt=_SALT)


def first_password_link(session: Session, secret_key: str) -> str | None:
    """A new setup link's path for user `admin` while it has no password (and is enabled), else None. Commits
    the audit event that it was issued."""
    admin = session.scalar(select(User).where(User.username == ADMIN_USERNAME))
    if admin is None or admin.password_hash is not None or admin.disabled_at is not None:
        return None
    code = _serializer(secret_key).dumps({"uid": admin.id, "g": admin.session_generation})
    detail = f"printed at start, valid {SETUP_LINK_HOURS} h"
    audit.record(session, "user.password_link", None, actor_name="server start", subject_user_id=admin.id,
                 detail=detail)  # fmt: skip
    session.commit()
    return f"{SETUP_PATH}?code={code}"


def setup_link_user(session: Session, secret_key: str, code: str) -> User:
    """The user a link may give a first password to; SetupLinkInvalid otherwise."""
    try:
        data = _serializer(secret_key).loads(code, max_age=SETUP_LINK_HOURS * 3600)
        user = session.get(User, int(data["uid"]))
        generation = int(data["g"])
    except (BadSignature, KeyError, TypeError, ValueError):
        raise SetupLinkInvalid() from None
    usable = user is not None and user.password_hash is None and user.disabled_at is None
    if not usable or user.session_generation != generation:
        raise SetupLinkInvalid()
    return user


def redeem_setup_link(session: Session, secret_key: str, code: str, new_password: str) -> User:
    """Set the link's user's first password, once: of two requests with one link, one wins and the other gets
    SetupLinkInvalid. Ends the user's page sessions (those opened with a token, the only ones they had)."""
    user = setup_link_user(session, secret_key, code)
    check_password_rules(new_password, "new_password")
    generation = user.session_generation
    claimed = session.execute(
        update(User)
        .where(User.id == user.id, User.session_generation == generation, User.password_hash.is_(None))
        .values(password_hash=hash_password(new_password), session_generation=generation + 1)
        .execution_options(synchronize_session=False)
    )
    if claimed.rowcount != 1:  # type: ignore[attr-defined]
        session.rollback()
        raise SetupLinkInvalid()
    audit.record(session, "user.password_setup", None, actor_name=user.username, subject_user_id=user.id,
                 detail="first password, set with a setup link")  # fmt: skip
    session.commit()
    session.refresh(user)
    return user
