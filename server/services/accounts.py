"""Managing accounts: a caller's API tokens, users, teams and memberships. Every change commits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import ApiToken, utcnow
from server.schemas.accounts import MAX_TOKEN_DAYS, TokenCreate, TokenCreated, TokenList, TokenOut
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound
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


def create_api_token(session: Session, caller: Caller, body: TokenCreate) -> TokenCreated:
    """A new token of the caller's; the raw secret is in the answer and nowhere else."""
    raw = new_token(USER_TOKEN_PREFIX)
    token = ApiToken(
        user_id=caller.user_id,
        name=body.name.strip() or body.name,
        token_hash=hash_token(raw),
        scope=body.scope,
        expires_at=_expiry(body),
        created_at=utcnow(),
    )
    session.add(token)
    session.commit()
    return TokenCreated.model_validate({**TokenOut.model_validate(token).model_dump(), "token": raw})


def list_api_tokens(session: Session, caller: Caller) -> TokenList:
    """The caller's own tokens, newest first, without any secret or hash."""
    rows = session.scalars(
        select(ApiToken).where(ApiToken.user_id == caller.user_id).order_by(ApiToken.id.desc())
    ).all()
    return TokenList(items=[TokenOut.model_validate(t) for t in rows])


def revoke_api_token(session: Session, caller: Caller, token_id: int) -> None:
    """Revoke one of the caller's tokens (again is a no-op); another user's token is not found."""
    token = session.scalar(select(ApiToken).where(ApiToken.id == token_id, ApiToken.user_id == caller.user_id))
    if token is None:
        raise NotFound(f"token {token_id} not found")
    if token.revoked_at is None:
        token.revoked_at = utcnow()
        session.commit()
