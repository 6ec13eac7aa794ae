"""The audit log: `record` adds a row in the caller's transaction; team admins read it per team."""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, func, or_, select
from sqlalchemy.orm import Session, aliased

from server.models import AUDIT_ACTIONS as AUDIT_ACTIONS  # the vocabulary of the events this service records
from server.models import AuditEvent, Membership, User, utcnow
from server.schemas.accounts import AuditEventOut, AuditPage
from server.services.auth import Caller

LOGIN_FAILED = "login.failed"


def record(
    session: Session,
    action: str,
    actor: Caller | None,
    *,
    team_id: int | None = None,
    job_id: int | None = None,
    subject_user_id: int | None = None,
    detail: str | None = None,
    actor_name: str | None = None,
    ip: str | None = None,
) -> None:
    """Add one event; it is stored when the action's own transaction commits, and never without it."""
    session.add(
        AuditEvent(
            created_at=utcnow(),
            action=action,
            actor_id=actor.user_id if actor else None,
            actor_name=(actor_name or (actor.username if actor else "?"))[:100],
            team_id=team_id,
            job_id=job_id,
            subject_user_id=subject_user_id,
            detail=detail,
            ip=ip[:64] if ip else None,
        )
    )


def _team_condition(team_id: int) -> ColumnElement[bool]:
    """The team's own events, and user-bound ones (tokens, passwords, failed logins) of its members."""
    members = select(Membership.user_id).where(Membership.team_id == team_id)
    return or_(
        AuditEvent.team_id == team_id,
        and_(AuditEvent.team_id.is_(None), AuditEvent.subject_user_id.in_(members)),
    )


def team_audit(session: Session, team_id: int, *, action: str | None, limit: int, offset: int) -> AuditPage:
    """Newest first. The caller has been checked to be an admin of the team (scoping.ensure_team_admin)."""
    conditions = [_team_condition(team_id)]
    if action:
        conditions.append(AuditEvent.action == action)
    total = session.scalar(select(func.count()).select_from(AuditEvent).where(*conditions)) or 0
    subject = aliased(User)
    rows = session.execute(
        select(AuditEvent, subject.username)
        .outerjoin(subject, subject.id == AuditEvent.subject_user_id)
        .where(*conditions)
        .order_by(AuditEvent.id.desc())
        .limit(limit)
        .offset(offset)
    ).all()
    items = [
        AuditEventOut(
            id=event.id,
            created_at=event.created_at,
            action=event.action,
            actor=event.actor_name,
            team_id=event.team_id,
            job_id=event.job_id,
            subject=username,
            detail=event.detail,
        )
        for event, username in rows
    ]
    return AuditPage(items=items, total=total)
