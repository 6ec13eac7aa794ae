"""The eval reward per eval step: the mean reward of that step's current eval samples (fixed prompts and
seeds, so steps compare). The job page's eval-reward chart draws it; the compare answer's eval reward is its
last point."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Sample
from server.schemas.samples import EvalRewards
from server.services.current_points import CurrentPoints, current_points, current_points_of_jobs


def eval_rewards(session: Session, job_id: int, current: CurrentPoints | None = None) -> EvalRewards:
    """Steps ascending, each with the mean reward of its current eval samples that have a reward."""
    current = current or current_points(session, job_id)
    return eval_rewards_of_jobs(session, [job_id], {job_id: current})[job_id]


def eval_rewards_of_jobs(
    session: Session, job_ids: Sequence[int], currents: dict[int, CurrentPoints] | None = None
) -> dict[int, EvalRewards]:
    """`eval_rewards` of many jobs in one statement (`currents`: their current_points, when already read)."""
    if not job_ids:
        return {}
    currents = currents if currents is not None else current_points_of_jobs(session, job_ids)
    rows = session.execute(
        select(Sample.job_id, Sample.step, Sample.attempt, Sample.reward).where(
            Sample.job_id.in_(job_ids), Sample.kind == "eval", Sample.reward.is_not(None)
        )
    )
    by_step: dict[int, dict[int, list[float]]] = {job_id: {} for job_id in job_ids}
    for job_id, step, attempt, reward in rows:
        if currents[job_id].is_current(attempt, step):
            by_step[job_id].setdefault(step, []).append(reward)
    out = {}
    for job_id, rewards in by_step.items():
        steps = sorted(rewards)
        out[job_id] = EvalRewards(steps=steps, values=[sum(rewards[s]) / len(rewards[s]) for s in steps])
    return out
