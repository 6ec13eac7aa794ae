"""Evaluation jobs: a prompt set x rewards on one checkpoint of a training job, on each of its checkpoints, or on its
base model, each an eval task job (services.task_jobs) whose spec's `reward` is the rewards evaluated, checked and
resolved as a training job's are; and the scores its trainer reports, stored with the figures computed once.

Everything is checked before the first job is queued: the prompt set (a built-in, or a file within the platform's
limits, else 422 naming the line), the rewards (422 naming `rewards.<i>...`) and the checkpoints (422 naming
`step`). The geneval reward checks each prompt against its GenEval metadata row: a prompt set that has none (a text
file or dataset, the colour or OCR set) is refused with it (422 naming the prompt set's field), not scored 0.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Artifact, Evaluation, EvaluationReward, Job, ModelVersion, utcnow
from server.schemas.evaluations import EvaluationRequest, EvaluationsQueued
from server.schemas.jobs import JobDetail
from server.services.auth import Caller
from server.services.dataset_pins import stored_prompts
from server.services.errors import Conflict, FieldErrors, NotFound
from server.services.evaluation_figures import reward_figures
from server.services.jobs import submit_job, validate_spec
from server.services.model_registry import visible_model
from server.services.reward_hacking import check_reward_hacking
from server.services.scoping import get_visible_job
from server.services.task_jobs import CHECKPOINT_KINDS, checkpoint_artifact, checkpoint_source, task_spec
from server.states import JobKind
from trainer.spec import SpecError
from trainer.spec.dataset_source import is_dataset_source
from trainer.spec.edit_set import text_prompts_problem
from trainer.spec.eval_task import EVAL_PROMPT_SETS, GENEVAL_METADATA_SETS, EvalTask, EvaluationReport
from trainer.spec.geneval_options import GENEVAL, missing_geneval_rows
from trainer.spec.prompt_file import parse_prompt_file


class PromptSet(NamedTuple):
    """The set's name (a team dataset's pinned reference), the file's or the dataset's prompts (none for a built-in
    set), and whether each prompt has a GenEval metadata row for the geneval reward."""

    name: str
    prompts: list[str]
    geneval_rows: bool


def prompt_set(session: Session, body: EvaluationRequest, settings: Settings, team_id: int | None) -> PromptSet:
    """The prompt set asked for, checked."""
    if (body.prompts is None) == (body.prompt_file is None):
        raise FieldErrors.one("prompts", f"give a built-in set ({', '.join(EVAL_PROMPT_SETS)}) or a prompt_file")
    if body.prompts is not None and is_dataset_source(body.prompts) and team_id is not None:
        limit = settings.max_eval_prompts
        pinned, format, prompts = stored_prompts(session, settings, team_id, body.prompts, "prompts", limit)
        return PromptSet(pinned, prompts, format == "geneval")
    if body.prompts is not None:
        if body.prompts not in EVAL_PROMPT_SETS:
            raise FieldErrors.one(
                "prompts", f"{body.prompts!r} is no built-in set; allowed: {', '.join(EVAL_PROMPT_SETS)}"
            )
        return PromptSet(body.prompts, [], body.prompts in GENEVAL_METADATA_SETS)
    assert body.prompt_file is not None
    size = len(body.prompt_file.content.encode())
    if size > settings.max_eval_prompt_bytes:
        message = f"{size} bytes, over the limit of {settings.max_eval_prompt_bytes}"
        raise FieldErrors.one("prompt_file.content", message)
    try:
        prompts = parse_prompt_file(body.prompt_file.name, body.prompt_file.content, settings.max_eval_prompts)
    except SpecError as exc:
        raise FieldErrors.one(exc.field, exc.message) from exc
    return PromptSet(body.prompt_file.name, prompts, False)


def _check_geneval_rows(body: EvaluationRequest, chosen: PromptSet) -> None:
    """The geneval reward on a set without GenEval metadata would score every sample 0: a 422 naming the set."""
    if chosen.geneval_rows or not any(reward.get("name") == GENEVAL for reward in body.rewards):
        return
    field = "prompts" if body.prompt_file is None else "prompt_file"
    raise FieldErrors.one(field, missing_geneval_rows(chosen.name))


def _checkpoints(session: Session, job: Job, body: EvaluationRequest) -> list[Artifact | None]:
    """The checkpoints to evaluate; None stands for the base model."""
    if sum([body.all_checkpoints, body.base_model, body.step is not None]) > 1:
        raise FieldErrors.one("step", "give one of step, all_checkpoints and base_model")
    if body.base_model:
        return [None]
    if not body.all_checkpoints:
        return [checkpoint_artifact(session, job, body.step)]
    latest: dict[int, Artifact] = {}
    for artifact in session.scalars(
        select(Artifact)
        .where(Artifact.job_id == job.id, Artifact.kind.in_(CHECKPOINT_KINDS), Artifact.step.is_not(None))
        .order_by(Artifact.id)
    ):
        latest[artifact.step or 0] = artifact
    if not latest:
        raise FieldErrors.one("all_checkpoints", f"job {job.id} has no checkpoint yet")
    return [latest[step] for step in sorted(latest)]


def _eval_spec(source: Job, name: str, rewards: list[dict[str, Any]], settings: Settings) -> dict[str, Any]:
    """The task job's spec: the source job's on one device, its `reward` the rewards evaluated (422 naming
    `rewards...` when one cannot run)."""
    spec = task_spec(source, name) | {"reward": rewards}
    try:
        validate_spec(spec, settings)
    except FieldErrors as exc:
        errors = exc.detail if isinstance(exc.detail, list) else []
        reward_errors = [e for e in errors if str(e.get("field", "")).startswith("reward")]
        if not reward_errors:
            raise
        raise FieldErrors([e | {"field": "rewards" + e["field"][len("reward") :]} for e in reward_errors]) from exc
    return spec


def request_evaluations(
    session: Session, caller: Caller, settings: Settings, job_id: int, body: EvaluationRequest
) -> EvaluationsQueued:
    """Queue one evaluation job per checkpoint asked for (or of the base model); all checked first."""
    job = get_visible_job(session, caller, job_id)
    if job.kind != JobKind.TRAIN:
        raise FieldErrors.one("job_id", f"job {job.id} is a {job.kind} job; only a training job is evaluated")
    chosen = prompt_set(session, body, settings, job.team_id)
    return _queue(session, caller, settings, job, _checkpoints(session, job, body), body, chosen)


def request_version_evaluation(
    session: Session, caller: Caller, settings: Settings, name: str, number: int, body: EvaluationRequest,
    team: str | None = None,
) -> EvaluationsQueued:  # fmt: skip
    """Queue an evaluation of a model version: its checkpoint artifact, on its job's spec."""
    if body.step is not None or body.all_checkpoints or body.base_model:
        raise FieldErrors.one("step", "a model version is one checkpoint: give no step, all_checkpoints or base_model")
    artifact = version_checkpoint(session, caller, name, number, team)
    job = session.get_one(Job, artifact.job_id)
    return _queue(session, caller, settings, job, [artifact], body, prompt_set(session, body, settings, job.team_id))


def version_checkpoint(session: Session, caller: Caller, name: str, number: int, team: str | None) -> Artifact:
    """The checkpoint artifact a model version of the caller's teams was registered from (404 for another team's
    model, as for a missing one; 422 when its checkpoint is gone)."""
    model, _ = visible_model(session, caller, name, team)
    version = session.scalar(
        select(ModelVersion).where(ModelVersion.model_id == model.id, ModelVersion.version == number)
    )
    if version is None:
        raise NotFound(f"version {number} of model {name!r} not found")
    artifact = None if version.artifact_id is None else session.get(Artifact, version.artifact_id)
    if artifact is None:
        raise FieldErrors.one("version", f"version {number} of model {name!r} has lost its checkpoint")
    return artifact


def _queue(
    session: Session, caller: Caller, settings: Settings, job: Job, targets: list[Artifact | None],
    body: EvaluationRequest, chosen: PromptSet,
) -> EvaluationsQueued:  # fmt: skip
    problem = text_prompts_problem(job.model_family, "an evaluation")
    if problem:
        raise FieldErrors.one("prompts", problem)
    _check_geneval_rows(body, chosen)
    name_of_set = chosen.name
    team = job.team.name if job.team is not None else None
    queued: list[JobDetail] = []
    for artifact in targets:
        where = "base model" if artifact is None else f"step {artifact.step}"
        name = f"eval {name_of_set} of {job.name} at {where}"
        spec = _eval_spec(job, name, body.rewards, settings)
        source = None if artifact is None else checkpoint_source(artifact)
        task = EvalTask(
            source=source, prompt_set=name_of_set, prompts=chosen.prompts, seeds_per_prompt=body.seeds_per_prompt
        )
        detail = submit_job(
            session, caller, spec, settings, team, kind=JobKind.EVAL, task=task.model_dump(mode="json"),
            source_artifact_id=None if artifact is None else artifact.id,
        )  # fmt: skip
        session.add(
            Evaluation(
                job_id=detail.id, source_job_id=job.id, source_artifact_id=None if artifact is None else artifact.id,
                step=None if artifact is None else artifact.step, prompt_set=name_of_set,
                seeds_per_prompt=body.seeds_per_prompt,
            )
        )  # fmt: skip
        session.commit()
        queued.append(detail)
    return EvaluationsQueued(jobs=queued)


def store_evaluation(session: Session, settings: Settings, job: Job, report: EvaluationReport) -> None:
    """An eval job's scores: the figures of each reward, computed once; a later attempt's report replaces an
    earlier one's. Then the source job's alarm is checked against them."""
    evaluation = session.scalar(select(Evaluation).where(Evaluation.job_id == job.id))
    if evaluation is None:
        raise Conflict(f"job {job.id} is not an evaluation job")
    if report.attempt != job.attempt:
        raise Conflict(f"attempt {report.attempt} is not job {job.id}'s current attempt ({job.attempt})")
    evaluation.rewards.clear()
    for reward in report.rewards:
        figures = reward_figures(reward.scores, report.seeds_per_prompt)
        evaluation.rewards.append(
            EvaluationReward(
                name=reward.name, mean=figures.mean, std=figures.std, n=figures.n, per_prompt=figures.per_prompt
            )
        )
    evaluation.prompts = report.prompts
    evaluation.seeds_per_prompt = report.seeds_per_prompt
    evaluation.reported_at = utcnow()
    session.flush()
    source = session.get(Job, evaluation.source_job_id)
    if source is not None:
        check_reward_hacking(session, settings, source)
    session.commit()
