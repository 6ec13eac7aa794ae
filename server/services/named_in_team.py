"""A team-owned thing looked up by its name (a registered model, a dataset): names are unique within a team, so
a caller in several teams may need to say which; another team's thing answers as a missing one."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Team
from server.services.auth import Caller
from server.services.errors import FieldErrors, NotFound


def visible_by_name(
    session: Session, caller: Caller, owner: Any, kind: str, name: str, team: str | None
) -> tuple[Any, Team]:
    """The `owner` row called `name` in the caller's teams (server admins: any team), in `team` when given, with
    its team; 404 naming the `kind` when none, a 422 naming `team` when several of the caller's teams hold one."""
    statement = select(owner, Team).join(Team, Team.id == owner.team_id).where(owner.name == name)
    if not caller.is_admin:
        statement = statement.where(owner.team_id.in_(caller.team_ids))
    if team is not None:
        statement = statement.where(Team.name == team)
    rows = session.execute(statement).all()
    if not rows:
        raise NotFound(f"{kind} {name!r} not found")
    if len(rows) > 1:
        teams = ", ".join(sorted(t.name for _, t in rows))
        raise FieldErrors.one("team", f"{kind} {name!r} is in several of your teams ({teams}); choose one with team")
    return rows[0][0], rows[0][1]
