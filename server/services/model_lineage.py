"""A model version's lineage, taken when the version is registered: the job and its spec, the code, the base model,
the algorithm and executor, and the job's reward figures at the checkpoint's step.

The figures are the ones the job's own pages and API show, read through the services that compute them: the
training reward is the current `reward/mean` point at the step (services.metric_history, GET
/api/v1/jobs/{id}/metrics/history), the eval reward the step's mean eval-sample reward (services.eval_rewards,
GET /api/v1/jobs/{id}/samples/eval-rewards)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from server.models import Job
from server.schemas.model_registry import BaseModelRef, Lineage, LineageJob
from server.services.code_version import code_version
from server.services.compare import REWARD_KEY
from server.services.current_points import current_points
from server.services.eval_rewards import eval_rewards
from server.services.metric_history import metric_history

# Points read past the step's first one: every attempt that reported the step, one of them current.
_ATTEMPTS_READ = 64


def training_reward_at(session: Session, job_id: int, step: int) -> float | None:
    """The job's current reward/mean point at `step`; None where it reported none there."""
    points = metric_history(session, job_id, REWARD_KEY, step - 1, _ATTEMPTS_READ)
    return next((p.value for p in points if p.step == step and p.current), None)


def eval_reward_at(session: Session, job_id: int, step: int) -> float | None:
    """The mean reward of the job's current eval samples at `step`; None where it logged none there."""
    rewards = eval_rewards(session, job_id, current_points(session, job_id))
    return dict(zip(rewards.steps, rewards.values, strict=True)).get(step)


def lineage_of(session: Session, job: Job, step: int) -> Lineage:
    model = job.spec.get("model") or {}
    return Lineage(
        job=LineageJob(id=job.id, name=job.name),
        spec=job.spec,
        code_version=code_version(),
        base_model=BaseModelRef(family=job.model_family, path=str(model.get("path", ""))),
        algorithm=job.algorithm,
        executor=job.executor,
        training_reward=training_reward_at(session, job.id, step),
        eval_reward=eval_reward_at(session, job.id, step),
    )
