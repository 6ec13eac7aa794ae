"""Jobs side by side: the one answer the compare page, `sfumato compare`, and scripts read."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from server.api.deps import UserCredentials, run_as_caller
from server.schemas.common import ErrorBody
from server.schemas.compare import Comparison
from server.services import compare as compare_service
from server.services.time_to_reward import parse_reward_target

router = APIRouter(tags=["compare"])


@router.get(
    "/compare",
    response_model=Comparison,
    responses={
        404: {"model": ErrorBody, "description": "a job (or the named reference) is unknown or not visible to you"},
        422: {
            "model": ErrorBody,
            "description": f"no ids, more than {compare_service.MAX_JOBS}, a reference outside the set, or a "
            "reward_target that is not a number",
        },
    },
)
async def compare_jobs(
    request: Request,
    credentials: UserCredentials,
    jobs: Annotated[str, Query(description=f"comma-separated job ids, at most {compare_service.MAX_JOBS}")],
    reference: Annotated[
        int | None,
        Query(
            ge=1,
            lt=2**31,
            description="the job of the set speedups are measured against; default: chosen by "
            "a rule that does not depend on the order of the ids (definitions.speedup)",
        ),
    ] = None,
    reward_target: Annotated[
        str | None,
        Query(
            description="R of the time-to-reward column, a number; default: the final reward of the set's native "
            "Flow-GRPO job (reward_target_reason says which), none without one"
        ),
    ] = None,
) -> Comparison:
    """Per job: executor, samples/s, speedup over one reference job (`reference`: 'speedup over #N'),
    analytical bound and measured / bound, peak memory, final, best and eval reward, duration, and the jobs it
    shared a host with, the reward against running seconds and the time to reach `reward_target`; and the spec
    fields that differ. `definitions` states what each figure means."""
    ids = compare_service.parse_job_ids(jobs)
    target = parse_reward_target(reward_target)
    return await run_as_caller(request, credentials, compare_service.compare, ids, reference, target)
