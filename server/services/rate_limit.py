"""Login rate limit: 5 attempts per minute for one username from one address, 20 from one address whatever
the usernames; then 429 until the window ends. A successful login gives its attempts back.

Each attempt is counted before any password is checked, by one atomic statement per key (an upsert that
returns the new count; on PostgreSQL it holds the key's row lock until the commit), so parallel attempts
cannot all read "4 failures" and all go on to argon2: of 40 at once, at most 5 check a password. The counts
live in the database (`login_throttles`) rather than in process memory, because production runs several
server processes and restarts them. The failures are also written to the audit log, as its trail.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import DateTime, Integer, bindparam, select, text
from sqlalchemy.orm import Session

from server.models import User, utcnow
from server.services import audit
from server.services.errors import TooManyRequests

LOGIN_WINDOW = timedelta(minutes=1)
LOGIN_MAX_PER_NAME = 5
LOGIN_MAX_PER_ADDRESS = 20
# Rows of windows that ended this long ago are deleted when a new window starts.
STALE_AFTER = timedelta(hours=1)

_COUNT_UP = (
    text(
        "INSERT INTO login_throttles (key, window_start, attempts) VALUES (:key, :now, 1) "
        "ON CONFLICT (key) DO UPDATE SET "
        "attempts = CASE WHEN login_throttles.window_start <= :since THEN 1 ELSE login_throttles.attempts + 1 END, "
        "window_start = CASE WHEN login_throttles.window_start <= :since THEN :now "
        "ELSE login_throttles.window_start END "
        "RETURNING attempts, window_start"
    )
    .bindparams(bindparam("now", type_=DateTime), bindparam("since", type_=DateTime))
    .columns(attempts=Integer, window_start=DateTime)
)
_GIVE_BACK = text("UPDATE login_throttles SET attempts = attempts - 1 WHERE key = :key AND attempts > 0")
_PRUNE = text("DELETE FROM login_throttles WHERE window_start < :stale").bindparams(bindparam("stale", type_=DateTime))


@dataclass(frozen=True)
class LoginAttempt:
    """A counted attempt: the keys it was counted under, given back if the login succeeds."""

    keys: tuple[str, ...]


def _name(username: str) -> str:
    """The name attempts are counted under; token logins (no username) share one."""
    return username.strip()[:100] or "(token)"


def _count_up(session: Session, key: str, now: datetime) -> tuple[int, datetime]:
    attempts, window_start = session.execute(_COUNT_UP, {"key": key, "now": now, "since": now - LOGIN_WINDOW}).one()
    if attempts == 1:
        session.execute(_PRUNE, {"stale": now - STALE_AFTER})
    return int(attempts), window_start


def count_login_attempt(session: Session, username: str, ip: str | None) -> LoginAttempt:
    """Count this attempt under its username-at-address and its address, and commit; raise TooManyRequests
    (before any password is checked) when either count is over its limit."""
    now = utcnow()
    address = (ip or "unknown")[:64]
    limits = {f"name:{_name(username)}@{address}": LOGIN_MAX_PER_NAME, f"addr:{address}": LOGIN_MAX_PER_ADDRESS}
    over: list[tuple[str, datetime]] = []
    for key, limit in limits.items():  # always in this order, so two attempts never wait on each other's rows
        attempts, window_start = _count_up(session, key, now)
        if attempts > limit:
            over.append((key, window_start))
    session.commit()
    if over:
        wait = max(1, int(max((start + LOGIN_WINDOW - now).total_seconds() for _, start in over)) + 1)
        what = "this address" if over[0][0].startswith("addr:") else "this username"
        raise TooManyRequests(f"too many login attempts from {what}; wait {wait} seconds and try again", wait)
    return LoginAttempt(tuple(limits))


def login_succeeded(session: Session, attempt: LoginAttempt) -> None:
    """A successful login does not count against the limits: give its attempts back."""
    for key in attempt.keys:
        session.execute(_GIVE_BACK, {"key": key})
    session.commit()


def record_login_failure(session: Session, username: str, ip: str | None) -> None:
    """One failed attempt, in the audit log (shown to the admins of the user's teams when the user exists)."""
    name = _name(username)
    user_id = session.scalar(select(User.id).where(User.username == name))
    audit.record(session, audit.LOGIN_FAILED, None, actor_name=name, subject_user_id=user_id, ip=ip)
    session.commit()
