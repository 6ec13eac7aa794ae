"""Checkpoints and models a job registered, confined to the job's folder."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Job
from server.schemas.artifacts import ArtifactList, ArtifactOut
from server.services.artifact_store import confined, job_folder
from server.services.errors import Conflict
from server.services.sql_text import column_types, rows_as_dicts, select_text
from trainer.spec.ingest import ArtifactRecord


def _size(path: Path) -> int | None:
    if path.is_file():
        return path.stat().st_size
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return None  # on another host's disk, or not written yet


def register_artifact(session: Session, settings: Settings, job: Job, body: ArtifactRecord) -> ArtifactOut:
    """Record a file or folder the trainer wrote under its output dir (the job folder); the same one sent again is
    the one recorded before. Commits. Its bytes follow by upload (artifact_uploads.py)."""
    if body.attempt > job.attempt:  # an earlier attempt's checkpoints may be announced late, from its spool
        raise Conflict(f"attempt {body.attempt} is newer than job {job.id}'s current attempt ({job.attempt})")
    folder = job_folder(settings, job.id)
    target = confined(folder, body.path, field="path")
    relative = target.relative_to(folder.resolve()).as_posix()
    same = session.scalar(
        select(Artifact).where(
            Artifact.job_id == job.id,
            Artifact.attempt == body.attempt,
            Artifact.kind == body.kind,
            Artifact.name == body.name,
            Artifact.path == relative,
        )
    )
    if same is not None:  # sent again (the reporter's acknowledgement was lost): its upload goes on
        return ArtifactOut.model_validate(same)
    artifact = Artifact(
        job_id=job.id,
        attempt=body.attempt,
        kind=body.kind,
        name=body.name,
        step=body.step,
        path=relative,
        size_bytes=_size(target),
    )
    session.add(artifact)
    session.commit()
    return ArtifactOut.model_validate(artifact)


_FIELDS = tuple(ArtifactOut.model_fields)
_LIST = select_text(
    f"SELECT {', '.join(_FIELDS)} FROM artifacts WHERE job_id = :job_id ORDER BY id",
    **column_types(Artifact.__table__, *_FIELDS),
)


def list_artifacts(session: Session, job_id: int) -> ArtifactList:
    """Oldest first (the job page lists them on every load: one statement written once)."""
    return ArtifactList.model_validate({"items": rows_as_dicts(session.execute(_LIST, {"job_id": job_id}))})
