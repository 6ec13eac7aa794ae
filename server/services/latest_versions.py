"""The team-owned, versioned things a caller may list (registered models, datasets), each with its team and its
latest version number: one query shape for every versioned registry, scoped to the caller's teams."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Row, func, select
from sqlalchemy.orm import InstrumentedAttribute, Session

from server.models import Team
from server.services.auth import Caller


def with_latest_versions(
    session: Session,
    caller: Caller,
    owner: Any,
    version_owner: InstrumentedAttribute[int],
    version_number: InstrumentedAttribute[int],
    team: str | None,
) -> list[Row[Any]]:
    """Rows (item, its Team, its latest version or None) of the `owner` model's items in the caller's teams (every
    team for an admin; `team` alone when given), by team then name. `version_owner` and `version_number` are the
    version table's foreign key to `owner` and its number column."""
    latest = (
        select(version_owner.label("owner_id"), func.max(version_number).label("latest"))
        .group_by(version_owner)
        .subquery()
    )
    statement = (
        select(owner, Team, latest.c.latest)
        .join(Team, Team.id == owner.team_id)
        .outerjoin(latest, latest.c.owner_id == owner.id)
        .order_by(Team.name, owner.name)
    )
    if not caller.is_admin:
        statement = statement.where(owner.team_id.in_(caller.team_ids))
    if team is not None:
        statement = statement.where(Team.name == team)
    return list(session.execute(statement).all())
