"""Evaluations of a job's checkpoints or base model: the request, each evaluation with its figures, the chart of
eval reward against step, and the reward-hacking alarm."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from server.schemas.common import UtcDatetime
from server.schemas.jobs import JobDetail
from trainer.spec.eval_task import MAX_EVAL_REWARDS


class PromptFileIn(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="ends in .txt (a prompt a line) or .jsonl ('prompt')")
    content: str = Field(description="the file's text; at most the platform's max_eval_prompt_bytes")


class EvaluationRequest(BaseModel):
    """What to evaluate (one checkpoint, all of them, or the base model) with which prompts and rewards."""

    model_config = ConfigDict(extra="forbid")

    prompts: str | None = Field(
        None,
        max_length=200,
        description="a built-in set, e.g. builtin:shapes-heldout, or a dataset of the job's team: "
        "dataset:NAME[@V][:test]",
    )
    prompt_file: PromptFileIn | None = Field(None, description="an uploaded prompt set, instead of `prompts`")
    rewards: list[dict[str, Any]] = Field(
        min_length=1, max_length=MAX_EVAL_REWARDS, description="reward entries as in a spec's `reward` list"
    )
    step: int | None = Field(
        None, ge=0, le=2**31 - 1, description="the checkpoint's step; default: the final model, else the latest"
    )
    all_checkpoints: bool = Field(False, description="one evaluation job per checkpoint of the job")
    base_model: bool = Field(False, description="the job's model before training (its spec's model as it is)")
    seeds_per_prompt: int = Field(1, ge=1, le=16, description="samples per prompt, seeds 0..n-1 of the eval stream")


class EvaluationRewardOut(BaseModel):
    name: str
    mean: float
    std: float = Field(description="population standard deviation over the n samples")
    n: int = Field(description="samples scored: prompts x seeds")


class EvaluationOut(BaseModel):
    """One evaluation: what it evaluates, its task job's status, and its figures once reported."""

    id: int
    job_id: int = Field(description="the evaluation's task job")
    status: str
    source_job_id: int
    source_artifact_id: int | None
    step: int | None = Field(description="the checkpoint's step; null: the base model")
    prompt_set: str
    seeds_per_prompt: int
    created_at: UtcDatetime
    reported_at: UtcDatetime | None
    rewards: list[EvaluationRewardOut]


class PromptScores(BaseModel):
    prompt: str
    scores: dict[str, float] = Field(description="each reward's mean over the prompt's seeds")


class EvaluationDetail(EvaluationOut):
    prompts: list[PromptScores]


class EvaluationList(BaseModel):
    items: list[EvaluationOut]


class EvaluationsQueued(BaseModel):
    jobs: list[JobDetail]


class StepSeries(BaseModel):
    key: str
    steps: list[int]
    values: list[float]


class EvaluationCurve(BaseModel):
    """Each (prompt set, reward) of the job's reported evaluations: its mean against the checkpoint's step (the
    base model at step 0; the latest evaluation where one step has several)."""

    series: list[StepSeries]


class RecordedAlarm(BaseModel):
    """The alarm as it was recorded when it first fired."""

    fired: bool = True
    fired_at: UtcDatetime
    series: str = Field(description="the held-out series that fell")
    first_step: int
    last_step: int
    training_rise: float
    held_out_drop: float


class RewardHackingOut(BaseModel):
    """The alarm (docs/evaluation.md): the training reward and each held-out series at the evaluation steps, and
    whether (and where) it fired."""

    fired: bool
    fired_at: UtcDatetime | None = None
    series: str | None = Field(None, description="the held-out series that fell")
    first_step: int | None = None
    last_step: int | None = None
    training_rise: float | None = None
    held_out_drop: float | None = None
    evaluations: int = Field(description="N: consecutive evaluations the alarm looks at")
    min_drop: float = Field(description="the held-out fall it takes, in reward units")
    training: StepSeries = Field(description="the training reward/mean, averaged since the previous evaluation")
    held_out: list[StepSeries]
