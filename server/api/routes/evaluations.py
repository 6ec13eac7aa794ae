"""Evaluations of a job's checkpoints or base model, the chart of eval reward against step, the reward-hacking
alarm, and the eval trainer's door for its scores (docs/evaluation.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, status

from server.api.deps import CallerDep, IngestJob, JobId, SessionDep, SettingsDep, VisibleJob, WriterDep
from server.api.routes.models import ModelNamePath, TeamQuery, VersionPath
from server.schemas.common import MAX_INT32, ErrorBody
from server.schemas.evaluations import (
    EvaluationCurve,
    EvaluationDetail,
    EvaluationList,
    EvaluationRequest,
    EvaluationsQueued,
    RewardHackingOut,
)
from server.services import evaluation_reads, evaluations
from server.services.reward_hacking import reward_hacking
from trainer.spec.eval_task import EvaluationReport

router = APIRouter(tags=["evaluations"])
EvaluationId = Annotated[int, Path(ge=1, le=MAX_INT32, description="evaluation id")]


@router.post(
    "/jobs/{job_id}/evaluations",
    status_code=status.HTTP_201_CREATED,
    response_model=EvaluationsQueued,
    responses={
        404: {"model": ErrorBody},
        422: {"model": ErrorBody, "description": "a bad prompt set (naming the line), reward or step"},
    },
)
def request_evaluations(
    job_id: JobId, body: EvaluationRequest, session: SessionDep, settings: SettingsDep, caller: WriterDep
) -> EvaluationsQueued:
    """Queue an evaluation job per checkpoint asked for (one, all, or the base model)."""
    return evaluations.request_evaluations(session, caller, settings, job_id, body)


@router.get("/jobs/{job_id}/evaluations", response_model=EvaluationList, responses={404: {"model": ErrorBody}})
def list_evaluations(job: VisibleJob, session: SessionDep) -> EvaluationList:
    """The evaluations of the job's checkpoints and base model, with their figures once reported."""
    return evaluation_reads.list_evaluations(session, job.id)


@router.get("/jobs/{job_id}/evaluations/curve", response_model=EvaluationCurve, responses={404: {"model": ErrorBody}})
def evaluation_curve(job: VisibleJob, session: SessionDep) -> EvaluationCurve:
    """Each (prompt set, reward) mean against the checkpoint's step (what the job page's chart draws)."""
    return evaluation_reads.evaluation_curve(session, job.id)


@router.post(
    "/models/{model_name}/versions/{version}/evaluations",
    status_code=status.HTTP_201_CREATED,
    response_model=EvaluationsQueued,
    responses={404: {"model": ErrorBody}, 422: {"model": ErrorBody}},
)
def request_version_evaluation(
    model_name: ModelNamePath, version: VersionPath, body: EvaluationRequest, session: SessionDep,
    settings: SettingsDep, caller: WriterDep, team: TeamQuery = None,
) -> EvaluationsQueued:  # fmt: skip
    """Queue an evaluation of the version's checkpoint (its job's spec, one device)."""
    return evaluations.request_version_evaluation(session, caller, settings, model_name, version, body, team)


@router.get(
    "/models/{model_name}/versions/{version}/evaluations",
    response_model=EvaluationList,
    responses={404: {"model": ErrorBody}},
)
def list_version_evaluations(
    model_name: ModelNamePath, version: VersionPath, session: SessionDep, caller: CallerDep, team: TeamQuery = None
) -> EvaluationList:
    """The evaluations of the version's checkpoint, with their figures: the version's table."""
    artifact = evaluations.version_checkpoint(session, caller, model_name, version, team)
    return evaluation_reads.version_evaluations(session, artifact.id)


@router.get("/evaluations/{evaluation_id}", response_model=EvaluationDetail, responses={404: {"model": ErrorBody}})
def show_evaluation(evaluation_id: EvaluationId, session: SessionDep, caller: CallerDep) -> EvaluationDetail:
    """One evaluation with each prompt's scores (an id from GET /jobs/{job_id}/evaluations)."""
    return evaluation_reads.evaluation_detail(session, caller, evaluation_id)


@router.get("/jobs/{job_id}/reward-hacking", response_model=RewardHackingOut, responses={404: {"model": ErrorBody}})
def get_reward_hacking(job: VisibleJob, session: SessionDep, settings: SettingsDep) -> RewardHackingOut:
    """The training reward and the held-out series at the evaluation steps, and whether the alarm fired."""
    return reward_hacking(session, settings, job)


@router.post(
    "/ingest/{job_id}/evaluation",
    tags=["ingest"],
    status_code=status.HTTP_204_NO_CONTENT,
    responses={
        401: {"model": ErrorBody, "description": "unknown token, or the job has finished"},
        403: {"model": ErrorBody, "description": "the token belongs to another job"},
        409: {"model": ErrorBody, "description": "not an evaluation job, or not its current attempt"},
    },
)
def ingest_evaluation(job: IngestJob, session: SessionDep, settings: SettingsDep, body: EvaluationReport) -> None:
    """An evaluation job's scores, with the job token; the platform computes and stores the figures."""
    evaluations.store_evaluation(session, settings, job, body)
