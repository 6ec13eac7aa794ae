"""An experiment's curves per cell group (mean over seeds, band from the lowest to the highest seed)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request

from server.api.deps import ExperimentId, UserCredentials, run_as_caller
from server.schemas.common import ErrorBody
from server.schemas.experiment_curves import ExperimentCurves
from server.services.experiment_curves import experiment_curves

router = APIRouter(tags=["experiments"])


@router.get(
    "/experiments/{experiment_id}/curves", response_model=ExperimentCurves, responses={404: {"model": ErrorBody}}
)
async def get_curves(
    request: Request,
    experiment_id: ExperimentId,
    credentials: UserCredentials,
    key: Annotated[str, Query(min_length=1, max_length=200, description="one metric key, e.g. reward/mean")],
    max_points: Annotated[int, Query(ge=10, le=100_000, description="most steps read per seed")] = 1000,
) -> ExperimentCurves:
    """What the experiment page's charts draw: per cell group, the mean of `key` over its seeds at each step,
    and the lowest and highest seed."""
    return await run_as_caller(request, credentials, experiment_curves, experiment_id, key, max_points)
