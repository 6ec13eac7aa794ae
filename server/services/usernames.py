"""The usernames of the users a listing names (a creator, an uploader), in one statement."""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import User


def usernames(session: Session, ids: Iterable[int | None]) -> dict[int, str]:
    """Username by user id, for the ids given (None and gone users left out)."""
    wanted = {i for i in ids if i is not None}
    if not wanted:
        return {}
    return dict(session.execute(select(User.id, User.username).where(User.id.in_(wanted))).all())
