"""Playground runs on a job's checkpoint: its prompts x seeds drawn by the base model and by the checkpoint."""

from __future__ import annotations

from fastapi import APIRouter, status

from server.api.deps import JobId, SessionDep, SettingsDep, VisibleJob, WriterDep
from server.schemas.common import ErrorBody
from server.schemas.jobs import JobDetail
from server.schemas.playground import PlaygroundList, PlaygroundRequest
from server.services import playground
from server.services.scoping import get_visible_job

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
