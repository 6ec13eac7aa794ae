"""Exports of a job's checkpoint (diffusers, comfyui, merged): each one an export task job (services.task_jobs)
whose trainer writes the format and registers it as its `export` artifact, which the platform then holds."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Job
from server.schemas.artifacts import ArtifactOut
from server.schemas.exports import ExportList, ExportOut, ExportRequest
from server.schemas.jobs import JobDetail
from server.services.auth import Caller
from server.services.errors import FieldErrors
from server.services.scoping import get_visible_job
from server.services.task_jobs import checkpoint_artifact, checkpoint_source, submit_task_job
from server.states import JobKind
from trainer.spec import SpecError
from trainer.spec.export_formats import check_export_format, export_formats
from trainer.spec.task import ExportTask


def _model(job: Job) -> tuple[str, str]:
    model = job.spec.get("model") or {}
    return job.model_family, str(model.get("finetune", "lora"))


def request_export(session: Session, caller: Caller, settings: Settings, job_id: int, body: ExportRequest) -> JobDetail:
    """Queue an export of the job's checkpoint at `body.step`; a format the family lacks is a 422 naming `format`,
    a step without a checkpoint one naming `step`. Nothing is stored on an error."""
    job = get_visible_job(session, caller, job_id)
    if job.kind != JobKind.TRAIN:
        raise FieldErrors.one("job_id", f"job {job.id} is a {job.kind} job; only a training job has checkpoints")
    family, finetune = _model(job)
    try:
        check_export_format(body.format, family, finetune)
    except SpecError as exc:
        raise FieldErrors.one(exc.field, exc.message) from exc
    artifact = checkpoint_artifact(session, job, body.step)
    task = ExportTask(source=checkpoint_source(artifact), format=body.format)
    name = f"export {body.format} of {job.name} at step {artifact.step}"
    return submit_task_job(session, caller, settings, job, artifact, JobKind.EXPORT, task, name)


def list_exports(session: Session, job_id: int) -> ExportList:
    """The export jobs of a job the caller may see, newest first, each with the export artifact it wrote (the
    latest, if retried)."""
    job = session.get_one(Job, job_id)
    exports = session.scalars(
        select(Job)
        .join(Artifact, Artifact.id == Job.source_artifact_id)
        .where(Job.kind == JobKind.EXPORT, Artifact.job_id == job.id)
        .order_by(Job.id.desc())
    ).all()
    written = {
        a.job_id: a
        for a in session.scalars(
            select(Artifact)
            .where(Artifact.job_id.in_([e.id for e in exports]), Artifact.kind == "export")
            .order_by(Artifact.id)
        )
    }
    items = [
        ExportOut(
            job_id=e.id,
            status=e.status,
            format=str((e.task or {}).get("format", "")),
            step=int(((e.task or {}).get("source") or {}).get("step", 0)),
            source_artifact_id=e.source_artifact_id,
            created_at=e.created_at,
            error=e.error,
            artifact=ArtifactOut.model_validate(written[e.id]) if e.id in written else None,
        )
        for e in exports
    ]
    return ExportList(items=items, formats=list(export_formats(*_model(job))))
