"""The eval reward per eval step: the mean reward of that step's current eval samples (fixed prompts and
seeds, so steps compare). The job page's eval-reward chart draws it; the compare answer's eval reward is its
last point."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Sample
from server.schemas.samples import EvalRewards
from server.services.current_points import CurrentPoints, current_points


def eval_rewards(session: Session, job_id: int, current: CurrentPoints | None = None) -> EvalRewards:
    """Steps ascending, each with the mean reward of its current eval samples that have a reward."""
    current = current or current_points(session, job_id)
    rows = session.execute(
        select(Sample.step, Sample.attempt, Sample.reward).where(
            Sample.job_id == job_id, Sample.kind == "eval", Sample.reward.is_not(None)
        )
    )
    by_step: dict[int, list[float]] = {}
    for step, attempt, reward in rows:
        if current.is_current(attempt, step):
            by_step.setdefault(step, []).append(reward)
    steps = sorted(by_step)
    return EvalRewards(steps=steps, values=[sum(by_step[s]) / len(by_step[s]) for s in steps])
