"""Submit, list, read, cancel and retry jobs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request, Response, status

from server.api.deps import JobId, SessionDep, SettingsDep, UserCredentials, WriterDep, json_body, run_as_caller
from server.schemas.common import ErrorBody
from server.schemas.jobs import JobDetail, JobPage
from server.services import job_reads, jobs

router = APIRouter(tags=["jobs"])

_SPEC_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {"type": "object", "description": "the job spec; its schema is at GET /api/v1/spec/schema"}
            }
        },
    }
}


@router.post(
    "/jobs",
    status_code=status.HTTP_201_CREATED,
    response_model=JobDetail,
    responses={422: {"model": ErrorBody, "description": "the spec cannot run; each error names its field"}},
    openapi_extra=_SPEC_BODY,
)
def submit_job(
    session: SessionDep,
    settings: SettingsDep,
    caller: WriterDep,
    data: Annotated[Any, Depends(json_body)],
    team: Annotated[str | None, Query(max_length=100, description="one of your teams")] = None,
) -> JobDetail:
    return jobs.submit_job(session, caller, data, settings, team)


@router.get("/jobs", response_model=JobPage)
async def list_jobs(
    request: Request,
    credentials: UserCredentials,
    status: Annotated[str | None, Query(description="one status or several, comma-separated")] = None,
    executor: Annotated[str | None, Query(max_length=40)] = None,
    algorithm: Annotated[str | None, Query(max_length=40)] = None,
    name: Annotated[str | None, Query(max_length=200, description="substring, case-insensitive")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> JobPage:
    filters = job_reads.parse_filters(status, executor, algorithm, name)
    return await run_as_caller(request, credentials, job_reads.list_jobs, filters, limit, offset)


@router.get("/jobs/{job_id}", response_model=JobDetail, responses={404: {"model": ErrorBody}})
async def get_job(request: Request, job_id: JobId, credentials: UserCredentials) -> JobDetail:
    return await run_as_caller(request, credentials, job_reads.job_detail, job_id)


@router.post(
    "/jobs/{job_id}/cancel",
    response_model=JobDetail,
    responses={
        202: {"model": JobDetail, "description": "running: the worker was asked to stop it"},
        409: {"model": ErrorBody, "description": "already finished"},
    },
)
def cancel_job(job_id: JobId, session: SessionDep, caller: WriterDep, response: Response) -> JobDetail:
    """Queued → cancelled at once (200); scheduled or running → cancel requested (202)."""
    detail, immediate = jobs.cancel_job(session, caller, job_id)
    response.status_code = status.HTTP_200_OK if immediate else status.HTTP_202_ACCEPTED
    return detail


@router.post(
    "/jobs/{job_id}/retry",
    response_model=JobDetail,
    responses={409: {"model": ErrorBody}, 429: {"model": ErrorBody, "description": "the queue limit is reached"}},
)
def retry_job(job_id: JobId, session: SessionDep, settings: SettingsDep, caller: WriterDep) -> JobDetail:
    return jobs.retry_job(session, caller, job_id, settings)
