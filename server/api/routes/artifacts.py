"""Checkpoints and models a job registered, their bytes (downloads with Range), and each team's artifact storage
and checkpoint retention."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Header, Path
from fastapi.responses import Response, StreamingResponse

from server.api.deps import ArtifactReadingJob, CallerDep, SessionDep, SettingsDep, VisibleJob, WriterDep
from server.schemas.artifacts import ArtifactList, ArtifactStorage, RetentionChange
from server.schemas.common import MAX_INT32, ErrorBody
from server.services.artifact_downloads import download, held_artifact
from server.services.artifact_retention import set_retention, storage_of
from server.services.artifacts import list_artifacts

router = APIRouter(tags=["artifacts"])

ArtifactId = Annotated[int, Path(ge=1, le=MAX_INT32, description="artifact id")]
TeamId = Annotated[int, Path(ge=1, le=MAX_INT32, description="team id")]


@router.get("/jobs/{job_id}/artifacts", response_model=ArtifactList)
def get_artifacts(job: VisibleJob, session: SessionDep) -> ArtifactList:
    return list_artifacts(session, job.id)


@router.get(
    "/jobs/{job_id}/artifacts/{artifact_id}/download",
    response_class=StreamingResponse,
    responses={
        200: {"content": {"application/octet-stream": {}, "application/x-tar": {}}, "description": "the whole"},
        206: {"description": "the byte range asked for (Range: bytes=START-END)"},
        404: {"model": ErrorBody, "description": "no such artifact, or its bytes are not on the platform"},
        416: {"description": "the range starts past the end (Content-Range: bytes */SIZE)"},
    },
)
def download_artifact(
    job: ArtifactReadingJob,
    artifact_id: ArtifactId,
    session: SessionDep,
    settings: SettingsDep,
    range_header: Annotated[str | None, Header(alias="Range")] = None,
    if_range: Annotated[str | None, Header(alias="If-Range")] = None,
) -> Response:
    """The artifact's bytes: a file as it is, a folder as one tar stream; `Repr-Digest` and `X-Checksum-Sha256`
    carry the SHA-256 of the whole. A user token (or page session) of the job's team, or the job token of a
    running job of the same team (a trainer fetching a checkpoint)."""
    answer = download(settings, held_artifact(session, job, artifact_id), range_header, if_range)
    if answer.status == 416:
        return Response(status_code=416, headers=answer.headers)
    return StreamingResponse(answer.body, status_code=answer.status, headers=answer.headers)


@router.get("/teams/{team_id}/artifact-storage", response_model=ArtifactStorage)
def get_artifact_storage(team_id: TeamId, session: SessionDep, caller: CallerDep) -> ArtifactStorage:
    """The bytes the team holds in the artifact store per kind, and its checkpoint retention."""
    return storage_of(session, caller, team_id)


@router.patch(
    "/teams/{team_id}/artifact-storage",
    response_model=ArtifactStorage,
    responses={403: {"model": ErrorBody, "description": "not an admin of the team"}},
)
def change_retention(
    team_id: TeamId, body: RetentionChange, session: SessionDep, settings: SettingsDep, caller: WriterDep
) -> ArtifactStorage:
    """Keep the last N checkpoints of each job (null: all); applied at once. Team admins."""
    return set_retention(session, settings, caller, team_id, body)
