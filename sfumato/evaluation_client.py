"""The client's evaluation calls (mixed into `Client`): queue evaluations of a job's checkpoints (one, all, or the
base model) with a prompt set and rewards, and read their figures, per-prompt scores and the reward-hacking alarm.

    [run] = client.evaluate(job.id, "builtin:shapes-heldout", ["prompt_color_match"], step=30)
    client.wait(run.id)
    print(client.evaluations(job.id)[-1].rewards)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from sfumato.models import Job, _Model


class EvaluationReward(_Model):
    name: str
    mean: float
    std: float
    n: int


class Evaluation(_Model):
    """One evaluation of a checkpoint (`step`) or of the base model (`step` None), with its figures once reported."""

    id: int
    job_id: int
    status: str
    source_job_id: int
    step: int | None = None
    prompt_set: str
    seeds_per_prompt: int
    created_at: datetime
    reported_at: datetime | None = None
    rewards: list[EvaluationReward]


class PromptScores(_Model):
    prompt: str
    scores: dict[str, float]


class EvaluationDetail(Evaluation):
    prompts: list[PromptScores]


class StepSeries(_Model):
    key: str
    steps: list[int]
    values: list[float]


class RewardHacking(_Model):
    fired: bool
    series: str | None = None
    first_step: int | None = None
    last_step: int | None = None
    training_rise: float | None = None
    held_out_drop: float | None = None
    evaluations: int
    min_drop: float
    training: StepSeries
    held_out: list[StepSeries]


def prompt_set_body(prompts: str) -> dict[str, Any]:
    """A built-in set by name, or a local .txt / .jsonl file sent as its text."""
    if prompts.startswith("builtin:"):
        return {"prompts": prompts}
    path = Path(prompts).expanduser()
    return {"prompt_file": {"name": path.name, "content": path.read_text()}}


class EvaluationCalls:
    """Needs the Client's transport (`_get`, `_post`)."""

    _get: Callable[..., Any]
    _post: Callable[..., Any]

    def evaluate(
        self,
        job_id: int,
        prompts: str,
        rewards: Sequence[str | dict[str, Any]],
        *,
        step: int | None = None,
        all_checkpoints: bool = False,
        base_model: bool = False,
        seeds_per_prompt: int = 1,
    ) -> list[Job]:
        """Queue an evaluation job per checkpoint asked for: `step` (default: the final model, else the latest),
        every checkpoint, or the base model. `prompts`: a built-in set or a local prompt file."""
        body = prompt_set_body(prompts) | {
            "rewards": [r if isinstance(r, dict) else {"name": r} for r in rewards],
            "step": step,
            "all_checkpoints": all_checkpoints,
            "base_model": base_model,
            "seeds_per_prompt": seeds_per_prompt,
        }
        return [Job.model_validate(j) for j in self._post(f"/jobs/{job_id}/evaluations", json=body)["jobs"]]

    def evaluations(self, job_id: int) -> list[Evaluation]:
        """The evaluations of the job's checkpoints and base model, by step."""
        return [Evaluation.model_validate(e) for e in self._get(f"/jobs/{job_id}/evaluations")["items"]]

    def evaluation(self, evaluation_id: int) -> EvaluationDetail:
        """One evaluation (an `id` of `evaluations`) with each prompt's scores."""
        return EvaluationDetail.model_validate(self._get(f"/evaluations/{evaluation_id}"))

    def reward_hacking(self, job_id: int) -> RewardHacking:
        """The job's reward-hacking alarm and its two curves (docs/evaluation.md)."""
        return RewardHacking.model_validate(self._get(f"/jobs/{job_id}/reward-hacking"))
