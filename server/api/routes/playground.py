"""Playground runs on a job's checkpoint: its prompts x seeds drawn by the base model and by the checkpoint."""

from __future__ import annotations

from fastapi import APIRouter, status

from server.api.deps import CallerDep, JobId, SessionDep, SettingsDep, VisibleJob, WriterDep
from server.api.routes.models import ModelNamePath, TeamQuery, VersionPath
from server.schemas.common import ErrorBody
from server.schemas.jobs import JobDetail
from server.schemas.playground import PlaygroundList, PlaygroundRequest
from server.services import playground
from server.services.scoping import get_visible_job
from trainer.spec.playground_task import PlaygroundSettings

router = APIRouter(tags=["playground"])


@router.post(
    "/jobs/{job_id}/playground",
    status_code=status.HTTP_201_CREATED,
    response_model=JobDetail,
    responses={
        404: {"model": ErrorBody},
        422: {"model": ErrorBody, "description": "prompts, seeds or sampler settings out of bounds, or no checkpoint"},
    },
)
def request_playground(
    job_id: JobId, body: PlaygroundRequest, session: SessionDep, settings: SettingsDep, caller: WriterDep
) -> JobDetail:
    """Queue a playground job on the checkpoint; its grid appears under GET .../playground when it is written."""
    job = get_visible_job(session, caller, job_id)
    return playground.request_playground(session, caller, settings, job, body)


@router.get("/jobs/{job_id}/playground", response_model=PlaygroundList, responses={404: {"model": ErrorBody}})
def list_playground(job: VisibleJob, session: SessionDep) -> PlaygroundList:
    """The job's playground runs, newest first, with their status and grid URL."""
    return playground.playground_runs(session, job)


@router.post(
    "/models/{model_name}/versions/{version}/playground",
    status_code=status.HTTP_201_CREATED,
    response_model=JobDetail,
    responses={
        404: {"model": ErrorBody},
        422: {"model": ErrorBody, "description": "prompts, seeds or sampler settings out of bounds"},
    },
)
def request_version_playground(
    model_name: ModelNamePath,
    version: VersionPath,
    body: PlaygroundSettings,
    session: SessionDep,
    settings: SettingsDep,
    caller: WriterDep,
    team: TeamQuery = None,
) -> JobDetail:
    """Queue a playground job on the version's checkpoint; the run is saved with the version."""
    checkpoint = playground.version_checkpoint(session, caller, model_name, version, team)
    return playground.request_version_playground(session, caller, settings, checkpoint, body)


@router.get(
    "/models/{model_name}/versions/{version}/playground",
    response_model=PlaygroundList,
    responses={404: {"model": ErrorBody}},
)
def list_version_playground(
    model_name: ModelNamePath, version: VersionPath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> PlaygroundList:
    """The playground runs saved with the version: those on its checkpoint, from the version or from its job."""
    checkpoint = playground.version_checkpoint(session, caller, model_name, version, team)
    return playground.checkpoint_playground_runs(session, checkpoint.artifact.id)
