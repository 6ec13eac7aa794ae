"""Team scoping, in one place: which jobs (and so which metrics, samples, logs, artifacts) a caller sees.

Every read of a job or of anything hanging off a job goes through `scope_jobs` or
`get_visible_job`. A caller sees the jobs of their teams and the jobs they submitted (even if
the team is gone); server admins see everything. Any other job is reported as not found,
never as forbidden, so its existence does not leak.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Select, or_, select
from sqlalchemy.orm import Session

from server.models import Job
from server.services.auth import Caller, TeamRole
from server.services.errors import FieldErrors, Forbidden, NotFound

S = TypeVar("S", bound=Select[Any])

SUBMIT_ROLES = ("member", "admin")


def scope_jobs(stmt: S, caller: Caller) -> S:
    """Restrict a select that reads `jobs` to what the caller may see."""
    if caller.is_admin:
        return stmt
    return stmt.where(or_(Job.team_id.in_(caller.team_ids), Job.owner_id == caller.user_id))


def get_visible_job(session: Session, caller: Caller, job_id: int) -> Job:
    job = session.scalar(scope_jobs(select(Job).where(Job.id == job_id), caller))
    if job is None:
        raise NotFound(f"job {job_id} not found")
    return job


def team_for_submission(caller: Caller, team_name: str | None) -> TeamRole:
    """The team a new job belongs to: the named one, or the caller's only team."""
    if team_name is not None:
        team = next((t for t in caller.teams if t.team_name == team_name), None)
        if team is None:
            yours = ", ".join(t.team_name for t in caller.teams) or "none"
            raise FieldErrors.one("team", f"you are not a member of team {team_name!r}; your teams: {yours}")
    elif len(caller.teams) == 1:
        team = caller.teams[0]
    elif not caller.teams:
        raise FieldErrors.one("team", "you belong to no team; ask an admin to add you to one")
    else:
        names = ", ".join(t.team_name for t in caller.teams)
        raise FieldErrors.one("team", f"you belong to several teams; choose one with ?team= ({names})")
    if team.role not in SUBMIT_ROLES:
        raise Forbidden(f"role {team.role!r} in team {team.team_name!r} cannot submit jobs")
    return team


def ensure_can_act(caller: Caller, job: Job) -> None:
    """Changing a job (cancel, retry) needs a member or admin role in its team, or server admin."""
    if caller.is_admin:
        return
    role = next((t.role for t in caller.teams if t.team_id == job.team_id), None)
    if role not in SUBMIT_ROLES:
        raise Forbidden(f"role {role!r} cannot change jobs of this team")
