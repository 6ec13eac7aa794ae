"""Team scoping and roles, in one place: what a caller sees and what they may change.

Every read of a job or of anything hanging off a job goes through `scope_jobs`, `VISIBLE_JOB` or
`get_visible_job`. A caller sees the jobs of their teams, and the jobs they submitted only while they
are in the job's team (or the team is gone): removing someone from a team ends their access to its jobs,
their own included. Server admins see everything. Any other job is reported as not found,
never as forbidden, so its existence does not leak. Teams work the same way (`visible_team`).

What each role of a team may do (a read-only token or session may only read, whatever the role):

| role    | read team jobs | submit | cancel / retry       | members, audit | hosts  |
|---------|----------------|--------|----------------------|----------------|--------|
| viewer  | yes            | no     | no                   | list members   | read   |
| member  | yes            | yes    | own jobs             | list members   | read   |
| admin   | yes            | yes    | any job of the team  | manage, audit  | manage |

A server admin (`users.is_admin`) may do everything, in every team, and create users and teams.
"""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Select, and_, or_, select
from sqlalchemy.orm import Session

from server.models import Job, Team
from server.services.auth import Caller, TeamRole
from server.services.errors import FieldErrors, Forbidden, NotFound

S = TypeVar("S", bound=Select[Any])

SUBMIT_ROLES = ("member", "admin")


def ensure_writer(caller: Caller) -> None:
    if not caller.can_write:
        raise Forbidden("this token is read-only")


def team_role(caller: Caller, team_id: int | None) -> str | None:
    return next((t.role for t in caller.teams if t.team_id == team_id), None)


def scope_jobs(stmt: S, caller: Caller) -> S:
    """Restrict a select that reads `jobs` to what the caller may see."""
    if caller.is_admin:
        return stmt
    own_teamless = and_(Job.team_id.is_(None), Job.owner_id == caller.user_id)
    return stmt.where(or_(Job.team_id.in_(caller.team_ids), own_teamless))


# The same rule for statements written as SQL over `jobs j`, with visibility(caller) as its bind values.
VISIBLE_JOB = "(:is_admin OR j.team_id IN :team_ids OR (j.team_id IS NULL AND j.owner_id = :user_id))"


def visibility(caller: Caller) -> dict[str, Any]:
    return {"is_admin": caller.is_admin, "team_ids": list(caller.team_ids), "user_id": caller.user_id}


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
    ensure_writer(caller)
    if team.role not in SUBMIT_ROLES:
        raise Forbidden(f"role {team.role!r} in team {team.team_name!r} cannot submit jobs")
    return team


def ensure_can_act(caller: Caller, job: Job) -> None:
    """Changing a job (cancel, retry): a team admin any of the team's, a member their own, or a server admin."""
    ensure_writer(caller)
    if caller.is_admin:
        return
    role = team_role(caller, job.team_id)
    if role == "admin" or (role == "member" and job.owner_id == caller.user_id):
        return
    if role == "member":
        raise Forbidden("a member may cancel or retry only their own jobs; ask an admin of the team")
    raise Forbidden(f"role {role!r} cannot change jobs of this team")


def visible_team(session: Session, caller: Caller, team_id: int) -> Team:
    """A team the caller is in (server admins: any); otherwise not found, like a job."""
    team = session.get(Team, team_id)
    if team is None or not (caller.is_admin or team_role(caller, team_id) is not None):
        raise NotFound(f"team {team_id} not found")
    return team


def ensure_team_admin(session: Session, caller: Caller, team_id: int) -> Team:
    """Managing a team's members or reading its audit log: its admins and server admins."""
    team = visible_team(session, caller, team_id)
    if not caller.is_admin and team_role(caller, team_id) != "admin":
        raise Forbidden(f"only an admin of team {team.name!r} may do this")
    return team


def ensure_server_admin(caller: Caller) -> None:
    if not caller.is_admin:
        raise Forbidden("only a server admin may do this")


def can_manage_hosts(caller: Caller) -> bool:
    """Drain, disable and enable hosts and devices: server admins and the admins of any team."""
    return caller.can_write and (caller.is_admin or any(t.role == "admin" for t in caller.teams))


def get_team_job_for_trainer(session: Session, trainer_job: Job, job_id: int) -> Job:
    """A job a trainer's job may read the artifacts of: any job of its own team (a job without a team: itself
    only); 404 otherwise, as for a user."""
    job = session.get(Job, job_id)
    same_team = job is not None and trainer_job.team_id is not None and job.team_id == trainer_job.team_id
    if job is None or not (same_team or job.id == trainer_job.id):
        raise NotFound(f"job {job_id} not found")
    return job
