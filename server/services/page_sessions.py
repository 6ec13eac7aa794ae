"""The user's page-session generation: a page session cookie records it at login and is accepted only while
it is current, so raising it logs out every page session of the user at once."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.models import User


def session_generation(session: Session, user_id: int) -> int:
    """The generation a page session opened now records."""
    return session.get_one(User, user_id).session_generation


def end_page_sessions(session: Session, user_id: int, generation: int) -> None:
    """Logout: end every page session of the user, if the one logging out is still current (a stale cookie
    changes nothing)."""
    user = session.get(User, user_id)
    if user is not None and user.session_generation == generation:
        user.session_generation += 1
        session.commit()
