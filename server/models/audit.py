"""The audit log: who did what to which job, team, user or token, and when. Rows are only ever added."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import DateTime, ForeignKey, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from server.models.base import Base, utcnow

AUDIT_ACTIONS = (
    "job.submit",
    "job.cancel",
    "job.retry",
    "experiment.create",
    "experiment.cancel",
    "experiment.retry",
    "experiment.note",
    "service.create",
    "service.stop",
    "member.add",
    "member.role",
    "member.remove",
    "team.create",
    "team.retention",
    "user.create",
    "user.password",
    "user.password_link",
    "user.password_setup",
    "user.disable",
    "user.enable",
    "token.create",
    "token.revoke",
    "model.register",
    "model.alias",
    "dataset.upload",
    "login.failed",
)


class AuditEvent(Base):
    """One action. `team_id` is set for team-bound actions (jobs, memberships); user-bound ones (tokens,
    passwords, failed logins) carry `subject_user_id` and are shown to the admins of that user's teams."""

    __tablename__ = "audit_events"

    id: Mapped[int] = mapped_column(primary_key=True)
    created_at: Mapped[datetime] = mapped_column(DateTime, default=utcnow, index=True)
    action: Mapped[str] = mapped_column(String(40))
    actor_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    # The actor's name when it happened (kept if the user goes), or the username a failed login tried.
    actor_name: Mapped[str] = mapped_column(String(100))
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="SET NULL"), index=True)
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"))
    subject_user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"), index=True)
    detail: Mapped[str | None] = mapped_column(Text)
    ip: Mapped[str | None] = mapped_column(String(64))
