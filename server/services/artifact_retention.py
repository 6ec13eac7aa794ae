"""Retention per team: keep the last N checkpoints of each job in the artifact store (a team setting; unset, all),
and always every checkpoint a model version was registered from, every model, export and playground grid; and the
bytes a team holds, per kind.

Pruning deletes the checkpoint's object from the store, which frees its bytes; the row stays (with `pruned_at`)
so the job page still lists the checkpoint, without a download.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Job, ModelVersion, Team
from server.models.base import utcnow
from server.schemas.artifacts import ArtifactStorage, RetentionChange
from server.services import audit
from server.services.artifact_store import artifact_store
from server.services.auth import Caller
from server.services.scoping import ensure_team_admin, ensure_writer, visible_team


def _held() -> list[object]:
    return [Artifact.store_key.is_not(None), Artifact.pruned_at.is_(None)]


def prune_checkpoints(session: Session, settings: Settings, job: Job) -> int:
    """Delete from the store the job's checkpoints beyond its team's retention (the latest by step are kept).
    Commits; returns how many were pruned."""
    keep = session.scalar(select(Team.checkpoint_retention).where(Team.id == job.team_id)) if job.team_id else None
    if keep is None:
        return 0
    held = session.scalars(
        select(Artifact)
        .where(Artifact.job_id == job.id, Artifact.kind == "checkpoint", *_held())
        .order_by(Artifact.step.desc().nulls_last(), Artifact.id.desc())
    ).all()
    registered = set(session.scalars(select(ModelVersion.artifact_id).where(ModelVersion.artifact_id.is_not(None))))
    pruned = [artifact for artifact in held[keep:] if artifact.id not in registered]
    store = artifact_store(settings)
    for artifact in pruned:
        artifact.pruned_at = utcnow()
    session.commit()
    for artifact in pruned:  # after the commit: a failed commit leaves every checkpoint downloadable
        store.delete(str(artifact.store_key))
    return len(pruned)


def _kept(retention: int | None) -> str:
    return "all" if retention is None else f"last {retention}"


def storage_of(session: Session, caller: Caller, team_id: int) -> ArtifactStorage:
    """Any member may read what the team holds."""
    team = visible_team(session, caller, team_id)
    rows = session.execute(
        select(Artifact.kind, func.coalesce(func.sum(Artifact.size_bytes), 0))
        .join(Job, Job.id == Artifact.job_id)
        .where(Job.team_id == team_id, *_held())
        .group_by(Artifact.kind)
        .order_by(Artifact.kind)
    ).all()
    by_kind = {kind: int(total) for kind, total in rows}
    return ArtifactStorage(
        team_id=team.id,
        bytes_by_kind=by_kind,
        total_bytes=sum(by_kind.values()),
        checkpoint_retention=team.checkpoint_retention,
    )


def set_retention(
    session: Session, settings: Settings, caller: Caller, team_id: int, change: RetentionChange
) -> ArtifactStorage:
    """Team admins only, audited; the new retention applies at once to every job of the team. Commits."""
    ensure_writer(caller)
    team = ensure_team_admin(session, caller, team_id)
    before, team.checkpoint_retention = team.checkpoint_retention, change.checkpoint_retention
    detail = f"checkpoint retention: {_kept(before)} -> {_kept(change.checkpoint_retention)}"
    audit.record(session, "team.retention", caller, team_id=team.id, detail=detail)
    session.commit()
    if change.checkpoint_retention is not None:
        holding = select(Artifact.job_id).where(Artifact.kind == "checkpoint", *_held())
        for job in session.scalars(select(Job).where(Job.team_id == team_id, Job.id.in_(holding))).all():
            prune_checkpoints(session, settings, job)
    return storage_of(session, caller, team_id)
