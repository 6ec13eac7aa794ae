"""How much one submission may be, and how many may wait: the spec's size and the queued jobs per user and team.

A 24 MB spec (1.5 million LoRA targets) was once accepted and made a 45 MB job page; nothing stopped one
user from queueing jobs without end. Both limits are settings (SFUMATO_MAX_SPEC_BYTES,
SFUMATO_MAX_QUEUED_PER_USER, SFUMATO_MAX_QUEUED_PER_TEAM) and both answers name the one that was hit.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Job, JobStatus, Team, User
from server.services.errors import PayloadTooLarge, TooManyRequests


def check_spec_size(data: Any, settings: Settings) -> None:
    """The spec as compact JSON is at most SFUMATO_MAX_SPEC_BYTES (413 otherwise)."""
    size = len(orjson.dumps(data))
    if size > settings.max_spec_bytes:
        raise PayloadTooLarge(
            f"the spec is {size} bytes of JSON; the limit is {settings.max_spec_bytes} (SFUMATO_MAX_SPEC_BYTES)"
        )


def _queued(session: Session, *where: Any) -> int:
    return session.scalar(select(func.count()).select_from(Job).where(Job.status == JobStatus.QUEUED, *where)) or 0


def check_queue_room(session: Session, user_id: int, team_id: int, settings: Settings, count: int = 1) -> None:
    """Room for `count` more queued jobs of this user and team (429 otherwise). The user's and the team's rows
    are locked first (in that order) so that two submissions cannot both take the last place."""
    session.execute(select(User.id).where(User.id == user_id).with_for_update())
    session.execute(select(Team.id).where(Team.id == team_id).with_for_update())
    mine = _queued(session, Job.owner_id == user_id)
    if mine + count > settings.max_queued_per_user:
        raise TooManyRequests(
            f"you have {mine} queued jobs, the limit per user (SFUMATO_MAX_QUEUED_PER_USER = "
            f"{settings.max_queued_per_user}){_asked(count, settings.max_queued_per_user - mine)}; "
            "wait for some to start, or cancel some"
        )
    theirs = _queued(session, Job.team_id == team_id)
    if theirs + count > settings.max_queued_per_team:
        raise TooManyRequests(
            f"the team has {theirs} queued jobs, the limit per team (SFUMATO_MAX_QUEUED_PER_TEAM = "
            f"{settings.max_queued_per_team}){_asked(count, settings.max_queued_per_team - theirs)}; "
            "wait for some to start, or cancel some"
        )


def _asked(count: int, room: int) -> str:
    """For a submission of several jobs (an experiment's cells): how many it needs and how many fit."""
    return f"; these {count} jobs need {count} places and {max(room, 0)} are left" if count > 1 else ""
