"""Login rate limit: 5 failed logins per (username, client address) per minute, then 429 until they age out.

Counted in the database, from the audit log's `login.failed` rows, rather than in process memory:
production runs several server processes (and restarts them), and an in-process counter would
give an attacker the limit once per process and a fresh one after every restart. The rows are
the audit trail of the failures too, so the limit costs no table of its own.
"""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import User
from server.services import audit
from server.services.errors import ServiceError

LOGIN_WINDOW = timedelta(minutes=1)
LOGIN_MAX_FAILURES = 5


class TooManyRequests(ServiceError):
    status_code = 429


def _key(username: str) -> str:
    """The name failures are counted under; token logins (no username) share one."""
    return username.strip()[:100] or "(token)"


def check_login_allowed(session: Session, username: str, ip: str | None) -> None:
    """Refuse the attempt (before any password is checked) while the failures of the last minute reach the limit."""
    if audit.recent_login_failures(session, _key(username), ip, LOGIN_WINDOW) >= LOGIN_MAX_FAILURES:
        seconds = int(LOGIN_WINDOW.total_seconds())
        raise TooManyRequests(f"too many failed logins; wait {seconds} seconds and try again")


def record_login_failure(session: Session, username: str, ip: str | None) -> None:
    """One failed attempt, in the audit log (shown to the admins of the user's teams when the user exists)."""
    name = _key(username)
    user_id = session.scalar(select(User.id).where(User.username == name))
    audit.record(session, audit.LOGIN_FAILED, None, actor_name=name, subject_user_id=user_id, ip=ip)
    session.commit()
