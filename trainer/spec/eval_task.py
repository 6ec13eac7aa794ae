"""An evaluation task (`kind: "eval"`): a prompt set x rewards on a checkpoint, or on the base model, sampled with
fixed seeds so that the same task gives the same numbers; and the report the trainer sends back. Torch-free: the
server builds the task and reads the report.

Each prompt is sampled `seeds_per_prompt` times with the seeds 0, 1, ... of the trainer's eval noise stream (the
in-training evaluation's, `trainer.run.evaluate`), by the deterministic ODE sampler: an evaluation of a step's
checkpoint on the job's own eval prompts scores the very images that step's eval samples show.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat, model_validator

from trainer.spec.base import BUILTIN_PROMPT_SOURCES
from trainer.spec.checkpoint_source import CheckpointSource

HELDOUT_SHAPES = "builtin:shapes-heldout"
EVAL_PROMPT_SETS = (*BUILTIN_PROMPT_SOURCES, HELDOUT_SHAPES)
# The built-in sets whose every prompt has a GenEval metadata row for the geneval reward: shapes captions
# (trainer/shapes_geneval_prompts.py). A team dataset of format geneval gives its own rows.
GENEVAL_METADATA_SETS = ("builtin:shapes", "builtin:shapes-geneval", HELDOUT_SHAPES)
MAX_EVAL_PROMPTS = 4096  # the most an evaluation task may carry, whatever the platform's own limit
MAX_PROMPT_CHARS = 1000
MAX_EVAL_REWARDS = 8


class EvalTask(BaseModel):
    """Score `prompts` (a file's or a team dataset's, carried in the task) or the built-in `prompt_set` with each
    reward of the task job's spec (`reward`: the platform checks and resolves them as it does a training job's). A
    dataset's `prompt_set` is its pinned reference (`dataset:<name>@<v>:<split>`): under the geneval reward the task
    fetches that version for its GenEval metadata rows, as a training job fetches its prompt set."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["eval"] = "eval"
    source: CheckpointSource | None = Field(None, description="the checkpoint; none: the spec's model as it is")
    prompt_set: str = Field(
        min_length=1, max_length=200, description="a built-in set, the uploaded file's name, or the pinned dataset"
    )
    prompts: list[str] = Field(default_factory=list, max_length=MAX_EVAL_PROMPTS)
    seeds_per_prompt: int = Field(1, ge=1, le=16)
    batch_size: int = Field(16, ge=1, le=256, description="images sampled at once")

    @model_validator(mode="after")
    def _prompts_or_builtin(self) -> EvalTask:
        if not self.prompts and self.prompt_set not in EVAL_PROMPT_SETS:
            raise ValueError(f"prompt_set {self.prompt_set!r} is no built-in set ({', '.join(EVAL_PROMPT_SETS)})")
        if self.prompts and self.prompt_set in EVAL_PROMPT_SETS:
            raise ValueError(f"prompt_set {self.prompt_set!r} is built in: the task carries no prompts for it")
        return self


class RewardScores(BaseModel):
    """One reward's score of every sample, prompt by prompt and each prompt's seeds in order."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=100)
    scores: list[FiniteFloat] = Field(max_length=MAX_EVAL_PROMPTS * 16)


class EvaluationReport(BaseModel):
    """POST /api/v1/ingest/{job_id}/evaluation: what an evaluation task scored (the platform computes the
    figures)."""

    model_config = ConfigDict(extra="forbid")

    attempt: int = Field(1, ge=1)
    prompts: list[str] = Field(min_length=1, max_length=MAX_EVAL_PROMPTS)
    seeds_per_prompt: int = Field(ge=1, le=16)
    rewards: list[RewardScores] = Field(min_length=1, max_length=MAX_EVAL_REWARDS)

    @model_validator(mode="after")
    def _one_score_per_sample(self) -> EvaluationReport:
        samples = len(self.prompts) * self.seeds_per_prompt
        for reward in self.rewards:
            if len(reward.scores) != samples:
                message = f"{len(reward.scores)} scores, for {samples} samples ({len(self.prompts)} prompts x seeds)"
                raise ValueError(f"rewards {reward.name!r}: {message}")
        return self
