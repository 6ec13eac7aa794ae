"""Reads of evaluations: a job's evaluations with their figures, one evaluation's per-prompt scores, and the chart
of eval reward against the checkpoint's step. The figures are the stored ones (services.evaluation_figures)."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Evaluation, Job
from server.schemas.evaluations import (
    EvaluationCurve,
    EvaluationDetail,
    EvaluationList,
    EvaluationOut,
    EvaluationRewardOut,
    PromptScores,
    StepSeries,
)
from server.services.auth import Caller
from server.services.errors import NotFound
from server.services.scoping import get_visible_job


def evaluation_out(evaluation: Evaluation, status: str) -> EvaluationOut:
    rewards = [EvaluationRewardOut(name=r.name, mean=r.mean, std=r.std, n=r.n) for r in evaluation.rewards]
    return EvaluationOut(
        id=evaluation.id,
        job_id=evaluation.job_id,
        status=status,
        source_job_id=evaluation.source_job_id,
        source_artifact_id=evaluation.source_artifact_id,
        step=evaluation.step,
        prompt_set=evaluation.prompt_set,
        seeds_per_prompt=evaluation.seeds_per_prompt,
        created_at=evaluation.created_at,
        reported_at=evaluation.reported_at,
        rewards=rewards,
    )


def list_evaluations(session: Session, job_id: int) -> EvaluationList:
    """The evaluations of the job's checkpoints and base model, by step (the base model first), newest last."""
    rows = session.execute(
        select(Evaluation, Job.status)
        .join(Job, Job.id == Evaluation.job_id)
        .where(Evaluation.source_job_id == job_id)
        .order_by(Evaluation.step.is_not(None), Evaluation.step, Evaluation.id)
    ).all()
    return EvaluationList(items=[evaluation_out(evaluation, status) for evaluation, status in rows])


def version_evaluations(session: Session, artifact_id: int) -> EvaluationList:
    """The evaluations of one checkpoint (a model version's), newest last."""
    rows = session.execute(
        select(Evaluation, Job.status)
        .join(Job, Job.id == Evaluation.job_id)
        .where(Evaluation.source_artifact_id == artifact_id)
        .order_by(Evaluation.id)
    ).all()
    return EvaluationList(items=[evaluation_out(evaluation, status) for evaluation, status in rows])


def evaluation_detail(session: Session, caller: Caller, evaluation_id: int) -> EvaluationDetail:
    """An evaluation the caller's teams may see, with each prompt's scores; 404 otherwise, the same as a missing
    one."""
    evaluation = session.get(Evaluation, evaluation_id)
    try:
        if evaluation is None:
            raise NotFound("")
        job = get_visible_job(session, caller, evaluation.job_id)
    except NotFound:
        raise NotFound(f"evaluation {evaluation_id} not found") from None
    prompts = [
        PromptScores(prompt=prompt, scores={r.name: r.per_prompt[index] for r in evaluation.rewards})
        for index, prompt in enumerate(evaluation.prompts or [])
    ]
    return EvaluationDetail(**evaluation_out(evaluation, job.status).model_dump(), prompts=prompts)


def evaluation_curve(session: Session, job_id: int) -> EvaluationCurve:
    """Each (prompt set, reward) of the job's reported evaluations against the checkpoint's step (the base model at
    step 0); where one step was evaluated more than once, the latest evaluation."""
    evaluations = session.scalars(
        select(Evaluation)
        .where(Evaluation.source_job_id == job_id, Evaluation.reported_at.is_not(None))
        .order_by(Evaluation.id)
    ).all()
    points: dict[str, dict[int, float]] = {}
    for evaluation in evaluations:
        for reward in evaluation.rewards:
            points.setdefault(f"{evaluation.prompt_set} · {reward.name}", {})[evaluation.step or 0] = reward.mean
    return EvaluationCurve(
        series=[
            StepSeries(key=key, steps=sorted(by_step), values=[by_step[s] for s in sorted(by_step)])
            for key, by_step in points.items()
        ]
    )
