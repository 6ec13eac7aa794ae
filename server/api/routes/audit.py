"""A team's audit log, for its admins (and server admins)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from server.api.deps import CallerDep, SessionDep
from server.api.routes.teams import TeamId
from server.models import AUDIT_ACTIONS
from server.schemas.accounts import AuditPage
from server.schemas.common import ErrorBody
from server.services import audit
from server.services.errors import FieldErrors
from server.services.scoping import ensure_team_admin

router = APIRouter(tags=["audit"], responses={403: {"model": ErrorBody}, 404: {"model": ErrorBody}})


@router.get("/teams/{team_id}/audit", response_model=AuditPage)
def team_audit(
    team_id: TeamId,
    session: SessionDep,
    caller: CallerDep,
    action: Annotated[str | None, Query(max_length=40, description="one action, e.g. job.cancel")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> AuditPage:
    """Newest first: submits, cancels, retries, role changes, tokens, passwords and failed logins of members."""
    ensure_team_admin(session, caller, team_id)
    if action and action not in AUDIT_ACTIONS:
        raise FieldErrors.one("action", f"unknown action {action!r}; allowed: {', '.join(AUDIT_ACTIONS)}")
    return audit.team_audit(session, team_id, action=action, limit=limit, offset=offset)
