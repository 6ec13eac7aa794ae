"""Jobs side by side: the one answer the compare page, `sfumato compare`, and scripts read."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from server.api.deps import UserCredentials, run_as_caller
from server.schemas.common import ErrorBody
from server.schemas.compare import Comparison
from server.services import compare as compare_service

router = APIRouter(tags=["compare"])


@router.get(
    "/compare",
    response_model=Comparison,
    responses={
        404: {"model": ErrorBody, "description": "a job is unknown or not visible to you"},
        422: {"model": ErrorBody, "description": f"no ids, or more than {compare_service.MAX_JOBS}"},
    },
)
async def compare_jobs(
    request: Request,
    credentials: UserCredentials,
    jobs: Annotated[str, Query(description=f"comma-separated job ids, at most {compare_service.MAX_JOBS}")],
) -> Comparison:
    """Per job: executor, samples/s, speedup over the native job in the set, analytical bound and measured /
    bound, peak memory, final, best and eval reward, duration, and the jobs it shared a host with; and the spec
    fields that differ. `definitions` states what each figure means."""
    ids = compare_service.parse_job_ids(jobs)
    return await run_as_caller(request, credentials, compare_service.compare, ids)
