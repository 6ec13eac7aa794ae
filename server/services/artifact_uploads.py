"""The resumable upload of an artifact's bytes (docs/artifacts.md; trainer/reporting/artifact_upload.py is the
other side): the offset held, a chunk appended at it, and the closing check of size and SHA-256.

The bytes received so far wait in `<artifact root>/uploads/<artifact id>.part`, on the server's own disk whatever
the store, so an upload resumes after any interruption and the store only ever receives a whole, checked artifact.
A refused close leaves the artifact as it was: its row and the object it had (if any) are not touched.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Job
from server.models.base import utcnow
from server.schemas.artifacts import ArtifactOut
from server.services.artifact_retention import prune_checkpoints
from server.services.artifact_store import artifact_store, upload_staging
from server.services.errors import Conflict, FieldErrors, NotFound
from trainer.spec.ingest import ArtifactUploadDone, file_sha256


def job_artifact(session: Session, job: Job, artifact_id: int) -> Artifact:
    """The job's artifact `artifact_id`; 404 for another job's or a missing one (the same answer)."""
    artifact = session.get(Artifact, artifact_id)
    if artifact is None or artifact.job_id != job.id:
        raise NotFound(f"artifact {artifact_id} not found")
    return artifact


def held_offset(settings: Settings, artifact: Artifact) -> int:
    """How many bytes of the upload in progress the server holds."""
    staging = upload_staging(settings, artifact.id)
    return staging.stat().st_size if staging.exists() else 0


async def append_chunk(settings: Settings, artifact: Artifact, offset: int, chunks: AsyncIterator[bytes]) -> int:
    """Append the request's body at `offset`, which must be the bytes held (409 otherwise, as tus answers); what
    arrives of a body cut short is kept. Returns the new offset."""
    held = held_offset(settings, artifact)
    if offset != held:
        raise Conflict(f"Upload-Offset {offset} is not the {held} bytes the server holds: resume from {held}")
    staging = upload_staging(settings, artifact.id)
    staging.parent.mkdir(parents=True, exist_ok=True)
    with staging.open("ab") as file:
        async for chunk in chunks:
            file.write(chunk)
            file.flush()
    return held_offset(settings, artifact)


def complete_upload(
    session: Session, settings: Settings, job: Job, artifact: Artifact, done: ArtifactUploadDone
) -> ArtifactOut:
    """Check the bytes held against `done` and make them the artifact's. Commits. A short upload is refused
    naming `size` (its bytes are kept to resume); bytes that are not what the trainer sent are refused naming
    `sha256` and dropped, so the next try starts again from 0."""
    staging = upload_staging(settings, artifact.id)
    held = held_offset(settings, artifact)
    if held < done.size:
        raise FieldErrors.one("size", f"the server holds {held} of the {done.size} bytes: resume from {held}")
    digest = file_sha256(staging) if held == done.size else None
    if digest != done.sha256:
        staging.unlink(missing_ok=True)
        found = f"{held} bytes" if digest is None else f"sha256 {digest}"
        raise FieldErrors.one(
            "sha256", f"checksum mismatch: the bytes received ({found}) are not those sent; upload again"
        )
    store = artifact_store(settings)
    earlier = artifact.store_key
    key = f"jobs/{job.id}/artifacts/{artifact.id}/{done.sha256}"
    store.put(key, staging)
    artifact.sha256, artifact.packing, artifact.store_key = done.sha256, done.packing, key
    artifact.size_bytes, artifact.uploaded_at, artifact.pruned_at = done.size, utcnow(), None
    session.commit()
    if earlier is not None and earlier != key:
        store.delete(earlier)
    answer = ArtifactOut.model_validate(artifact)
    prune_checkpoints(session, settings, job)
    return answer
