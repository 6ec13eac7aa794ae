"""How much one submission may be, and how many may wait: the spec's size and the queued jobs per user and team.

A 24 MB spec (1.5 million LoRA targets) was once accepted and made a 45 MB job page; nothing stopped one
user from queueing jobs without end. Both limits are settings (SFUMATO_MAX_SPEC_BYTES,
SFUMATO_MAX_QUEUED_PER_USER, SFUMATO_MAX_QUEUED_PER_TEAM) and both answers name the one that was hit.

`check_queue_room` is the one check of every way into the queue: submit (and a clone, which is a submit),
an experiment, retry, experiment retry, advice and its submit, run side by side. Retry once skipped it, and
100 queued jobs became 110.
"""

from __future__ import annotations

from typing import Any

import orjson
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Job, JobStatus, Team, User
from server.services.errors import FieldErrors, PayloadTooLarge, TooManyRequests
from server.services.storable_values import unstorable_fields


def check_spec_size(data: Any, settings: Settings) -> None:
    """The spec holds only values the database can store (422 naming each other one: a NUL, an integer beyond 64
    bits, which the JSON encoder below cannot even measure), and as compact JSON is at most
    SFUMATO_MAX_SPEC_BYTES (413 otherwise). Every spec passes here, from the API or a page."""
    unstorable = unstorable_fields(data)
    if unstorable:
        raise FieldErrors(unstorable)
    size = len(orjson.dumps(data))
    if size > settings.max_spec_bytes:
        raise PayloadTooLarge(
            f"the spec is {size} bytes of JSON; the limit is {settings.max_spec_bytes} (SFUMATO_MAX_SPEC_BYTES)"
        )


def _queued(session: Session, *where: Any) -> int:
    return session.scalar(select(func.count()).select_from(Job).where(Job.status == JobStatus.QUEUED, *where)) or 0


def check_queue_room(
    session: Session, user_id: int | None, team_id: int | None, settings: Settings, count: int = 1
) -> None:
    """Room for `count` more queued jobs of this user and team (429 otherwise): the jobs' owner and team, so a
    retry counts against whoever the job is queued for. The user's row, then the team's, is locked before its
    jobs are counted, so that two submissions cannot both take the last place. A job whose owner or team is gone
    (None) is held by the limit that remains."""
    if user_id is not None:
        username = session.scalar(select(User.username).where(User.id == user_id).with_for_update())
        mine = _queued(session, Job.owner_id == user_id)
        _refuse_past_limit("user", f"{username} has", mine, settings.max_queued_per_user, count)
    if team_id is not None:
        session.execute(select(Team.id).where(Team.id == team_id).with_for_update())
        theirs = _queued(session, Job.team_id == team_id)
        _refuse_past_limit("team", "the team has", theirs, settings.max_queued_per_team, count)


def _refuse_past_limit(per: str, whose: str, queued: int, limit: int, count: int) -> None:
    if queued + count > limit:
        raise TooManyRequests(
            f"{whose} {queued} queued jobs, the limit per {per} (SFUMATO_MAX_QUEUED_PER_{per.upper()} = {limit})"
            f"{_asked(count, limit - queued)}; wait for some to start, or cancel some"
        )


def _asked(count: int, room: int) -> str:
    """For a submission of several jobs (an experiment's cells): how many it needs and how many fit."""
    return f"; these {count} jobs need {count} places and {max(room, 0)} are left" if count > 1 else ""
