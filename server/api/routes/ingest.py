"""The trainer's door (docs/contracts.md): metrics, samples, progress, artifacts (and the resumable upload of their
bytes, docs/artifacts.md) and the advisor's probe report, with the per-job token."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, File, Form, Header, Path, Request, Response, UploadFile, status
from sqlalchemy.orm import Session
from starlette.concurrency import run_in_threadpool

from server.api.deps import IngestJob, JobCredentials, JobId, SessionDep, SettingsDep, run_as_trainer
from server.api.orjson_route import OrjsonRoute
from server.models import Job
from server.schemas.artifacts import ArtifactOut
from server.schemas.common import MAX_INT32, ErrorBody
from server.schemas.metrics import MetricBatchStored
from server.schemas.progress import ProgressStored
from server.schemas.samples import SampleCreated
from server.services.advice import store_probe
from server.services.artifact_uploads import append_chunk, complete_upload, held_offset, job_artifact
from server.services.artifacts import register_artifact
from server.services.errors import PayloadTooLarge
from server.services.metrics import store_metric_batch
from server.services.progress import record_progress
from server.services.samples import store_sample
from trainer.spec.ingest import (
    UPLOAD_OFFSET_HEADER,
    ArtifactRecord,
    ArtifactUploadDone,
    MetricBatch,
    ProgressReport,
    SampleForm,
)
from trainer.spec.probe_report import ProbeReport

router = APIRouter(
    route_class=OrjsonRoute,
    prefix="/ingest",
    tags=["ingest"],
    responses={
        401: {"model": ErrorBody, "description": "unknown token, or the job has finished"},
        403: {"model": ErrorBody, "description": "the token belongs to another job"},
        409: {"model": ErrorBody, "description": "not the job's current attempt"},
    },
)


@router.post("/{job_id}/metrics", response_model=MetricBatchStored, responses={413: {"model": ErrorBody}})
async def ingest_metrics(
    request: Request, job_id: JobId, credentials: JobCredentials, settings: SettingsDep, batch: MetricBatch
) -> MetricBatchStored:
    """The call trainers make most: authenticated and stored in one trip to the thread pool."""
    return await run_as_trainer(request, credentials, job_id, _store_metrics, batch, settings.max_metric_points)


def _store_metrics(session: Session, job: Job, batch: MetricBatch, max_points: int) -> MetricBatchStored:
    stored, skipped = store_metric_batch(session, job, batch, max_points)
    return MetricBatchStored(stored=stored, skipped=skipped)


@router.post(
    "/{job_id}/samples",
    status_code=status.HTTP_201_CREATED,
    response_model=SampleCreated,
    responses={413: {"model": ErrorBody}, 422: {"model": ErrorBody}},
)
def ingest_sample(
    job: IngestJob,
    session: SessionDep,
    settings: SettingsDep,
    form: Annotated[SampleForm, Form()],
    image: Annotated[UploadFile, File(description="PNG or WebP")],
) -> SampleCreated:
    data = image.file.read(settings.max_image_bytes + 1)
    if len(data) > settings.max_image_bytes:
        raise PayloadTooLarge(f"image is larger than {settings.max_image_bytes} bytes")
    sample_id, created = store_sample(session, settings, job, form, data)
    return SampleCreated(id=sample_id, created=created)


@router.post("/{job_id}/progress", response_model=ProgressStored)
def ingest_progress(job: IngestJob, session: SessionDep, progress: ProgressReport) -> ProgressStored:
    return ProgressStored(cancel_requested=record_progress(session, job, progress))


@router.post("/{job_id}/probe", status_code=status.HTTP_204_NO_CONTENT)
def ingest_probe(job: IngestJob, session: SessionDep, body: ProbeReport) -> None:
    """The advisor's probe report (a probe job only; 409 for another job)."""
    store_probe(session, job, body)


@router.post("/{job_id}/artifacts", status_code=status.HTTP_201_CREATED, response_model=ArtifactOut)
def ingest_artifact(job: IngestJob, session: SessionDep, settings: SettingsDep, body: ArtifactRecord) -> ArtifactOut:
    return register_artifact(session, settings, job, body)


ArtifactId = Annotated[int, Path(ge=1, le=MAX_INT32, description="artifact id")]
UploadOffset = Annotated[int, Header(alias=UPLOAD_OFFSET_HEADER, ge=0, description="where this chunk starts")]


@router.head("/{job_id}/artifacts/{artifact_id}/upload", status_code=status.HTTP_204_NO_CONTENT)
def upload_offset(job: IngestJob, artifact_id: ArtifactId, session: SessionDep, settings: SettingsDep) -> Response:
    """How many bytes of the artifact's upload the server holds (`Upload-Offset`): where to resume."""
    held = held_offset(settings, job_artifact(session, job, artifact_id))
    return Response(status_code=status.HTTP_204_NO_CONTENT, headers={UPLOAD_OFFSET_HEADER: str(held)})


@router.patch(
    "/{job_id}/artifacts/{artifact_id}/upload",
    status_code=status.HTTP_204_NO_CONTENT,
    responses={409: {"model": ErrorBody, "description": "Upload-Offset is not the bytes held"}, 413: {}},
)
async def upload_chunk(
    request: Request, job: IngestJob, artifact_id: ArtifactId, session: SessionDep, settings: SettingsDep,
    offset: UploadOffset,
) -> Response:  # fmt: skip
    """Append the body (`application/offset+octet-stream`, at most SFUMATO_MAX_BODY_BYTES) at `Upload-Offset`."""
    artifact = await run_in_threadpool(job_artifact, session, job, artifact_id)
    held = await append_chunk(settings, artifact, offset, request.stream())
    return Response(status_code=status.HTTP_204_NO_CONTENT, headers={UPLOAD_OFFSET_HEADER: str(held)})


@router.post(
    "/{job_id}/artifacts/{artifact_id}/upload/complete",
    response_model=ArtifactOut,
    responses={422: {"model": ErrorBody, "description": "size or sha256 not those of the bytes held"}},
)
def upload_complete(
    job: IngestJob, artifact_id: ArtifactId, session: SessionDep, settings: SettingsDep, body: ArtifactUploadDone
) -> ArtifactOut:
    """Check the bytes held against the size and SHA-256 sent, and make them the artifact's."""
    return complete_upload(session, settings, job, job_artifact(session, job, artifact_id), body)
