"""The executor advisor: ask which executor to run a spec with, read the answer, submit with the chosen one."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request, status

from server.api.deps import JobId, SessionDep, SettingsDep, UserCredentials, WriterDep, run_as_caller
from server.schemas.advice import AdviceOut, AdviceSubmit, AdviseRequest, PredictionCheck
from server.schemas.common import ErrorBody
from server.schemas.jobs import JobDetail
from server.services import advice

router = APIRouter(tags=["advice"])
AdviceId = Annotated[int, Path(ge=1, le=2**31 - 1)]
Team = Annotated[str | None, Query(max_length=100, description="one of your teams")]


@router.post(
    "/advise",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=AdviceOut,
    responses={
        409: {"model": ErrorBody, "description": "no host of the requested class is online"},
        422: {"model": ErrorBody, "description": "the spec (as for submit) or the memory budget is invalid"},
    },
)
def request_advice(
    session: SessionDep, settings: SettingsDep, caller: WriterDep, body: AdviseRequest, team: Team = None
) -> AdviceOut:
    """Queue a probe job on the host class; poll GET /advice/{id} until its state is answered or failed."""
    return advice.request_advice(session, caller, body, settings, team)


@router.get("/advice/{advice_id}", response_model=AdviceOut, responses={404: {"model": ErrorBody}})
async def get_advice(request: Request, advice_id: AdviceId, credentials: UserCredentials) -> AdviceOut:
    return await run_as_caller(request, credentials, advice.advice_detail, advice_id)


@router.post(
    "/advice/{advice_id}/submit",
    status_code=status.HTTP_201_CREATED,
    response_model=JobDetail,
    responses={
        404: {"model": ErrorBody},
        409: {"model": ErrorBody, "description": "the advice has no answer yet"},
        422: {"model": ErrorBody, "description": "the executor has no prediction in the answer"},
    },
)
def submit_from_advice(
    advice_id: AdviceId,
    session: SessionDep,
    settings: SettingsDep,
    caller: WriterDep,
    body: AdviceSubmit,
    team: Team = None,
) -> JobDetail:
    """Submit the advised spec with this executor; the job records the advice it came from."""
    return advice.submit_from_advice(session, caller, advice_id, body.executor, settings, team)


@router.get(
    "/jobs/{job_id}/prediction",
    response_model=PredictionCheck | None,
    responses={404: {"model": ErrorBody}},
)
async def get_prediction(request: Request, job_id: JobId, credentials: UserCredentials) -> PredictionCheck | None:
    """A job submitted from an advice: the advice's prediction against the job's measurement, with the warning
    when the job or the probe shared a host; null for a job not submitted from an advice."""
    return await run_as_caller(request, credentials, advice.prediction_for_job, job_id)
