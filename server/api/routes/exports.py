"""Exports of a job's checkpoint in a format other tools load (diffusers, comfyui, merged)."""

from __future__ import annotations

from fastapi import APIRouter, status

from server.api.deps import JobId, SessionDep, SettingsDep, VisibleJob, WriterDep
from server.schemas.common import ErrorBody
from server.schemas.exports import ExportList, ExportRequest
from server.schemas.jobs import JobDetail
from server.services import exports

router = APIRouter(tags=["exports"])


@router.post(
    "/jobs/{job_id}/exports",
    status_code=status.HTTP_201_CREATED,
    response_model=JobDetail,
    responses={
        404: {"model": ErrorBody},
        422: {"model": ErrorBody, "description": "a format the family lacks, or a step without a checkpoint"},
    },
)
def request_export(
    job_id: JobId, body: ExportRequest, session: SessionDep, settings: SettingsDep, caller: WriterDep
) -> JobDetail:
    """Queue an export job for the checkpoint; its `export` artifact appears under GET .../exports when done."""
    return exports.request_export(session, caller, settings, job_id, body)


@router.get("/jobs/{job_id}/exports", response_model=ExportList, responses={404: {"model": ErrorBody}})
def list_exports(job: VisibleJob, session: SessionDep) -> ExportList:
    return exports.list_exports(session, job.id)
