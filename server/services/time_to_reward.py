"""Reward against the job's own running seconds, and "time to reward R": how methods that do different work per
sample compare (samples/s cannot).

A job's reward series is its eval reward (services.eval_rewards) where it has one, else its training
`reward/mean`. A point's second is how long the job's trainer had run when the point was reported: its wall
time cut into the job's attempt intervals (services.job_duration.ran_until), so time in the queue and time the
platform was down are not counted. A job without attempt intervals counts from its start (else from its first
point). An eval step is timed by the training point of the same step. Time to reward R: the second of the
first point whose reward is at least R.

R is the caller's (`reward_target=`), else the final reward (the last point of this series) of the native
Flow-GRPO job of the set: the speedup reference when it is one, else the one with the lowest id.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Job, MetricBlock
from server.schemas.samples import EvalRewards
from server.services import job_duration
from server.services.current_points import CurrentPoints
from server.services.errors import FieldErrors
from server.services.eval_rewards import eval_rewards_of_jobs
from server.services.metric_reads import current_points_of_block

# The latest wall time a datetime holds: a stored inf or 1e300 is no point's time, and is left out of the curves.
LATEST_WALL = datetime(9999, 12, 31, tzinfo=UTC).timestamp()


def a_time(wall: float) -> bool:
    return math.isfinite(wall) and 0 <= wall < LATEST_WALL


REWARD_KEY = "reward/mean"
DEFAULT_ALGORITHM, DEFAULT_EXECUTOR = "flow_grpo", "native"
MAX_CURVE_POINTS = 1000  # a chart's worth; the time to reward is found on every point
DEFINITION = (
    "the job's running seconds (the duration's definition, counted up to the moment a point was reported) at the "
    "first point of its reward series (its eval reward where it has one, else its training reward/mean) whose "
    "reward is at least the target R; null when it never reached R"
)
NAMED = "named by the caller (reward_target=)"


@dataclass(frozen=True)
class RewardCurve:
    source: str  # "eval" or "train"
    steps: list[int]
    seconds: list[float]
    rewards: list[float]


@dataclass(frozen=True)
class Reached:
    seconds: float | None
    step: int | None


@dataclass(frozen=True)
class Target:
    value: float | None
    job_id: int | None
    reason: str


def parse_reward_target(raw: str | None) -> float | None:
    """`0.62` → 0.62; empty → None (the default rule); anything else is refused naming `reward_target`."""
    if raw is None or not raw.strip():
        return None
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value):
        raise FieldErrors.one("reward_target", f"{raw!r} is not a number; give a reward, e.g. reward_target=0.6")
    return value


def _train_points(session: Session, job_ids: Sequence[int], currents: dict[int, CurrentPoints]) -> dict[int, list]:
    """Each job's current `reward/mean` points, (step, value, wall) by step."""
    found: dict[int, list] = {job_id: [] for job_id in job_ids}
    rows = session.execute(
        select(MetricBlock.job_id, MetricBlock.attempt, MetricBlock.points).where(
            MetricBlock.job_id.in_(list(job_ids)), MetricBlock.key == REWARD_KEY
        )
    )
    for job_id, attempt, data in rows:
        found[job_id] += current_points_of_block(data, attempt, currents[job_id]).tolist()
    return {job_id: sorted(points) for job_id, points in found.items()}


def _thin(curve: RewardCurve, keep: int | None) -> RewardCurve:
    """At most MAX_CURVE_POINTS points, evenly spaced, always with the first, the last and `keep`."""
    n = len(curve.steps)
    if n <= MAX_CURVE_POINTS:
        return curve
    picked = sorted({round(i * (n - 1) / (MAX_CURVE_POINTS - 2)) for i in range(MAX_CURVE_POINTS - 1)} | {keep or 0})
    return RewardCurve(
        curve.source, [curve.steps[i] for i in picked], [curve.seconds[i] for i in picked],
        [curve.rewards[i] for i in picked],
    )  # fmt: skip


def reward_curves(
    session: Session,
    jobs: Sequence[Job],
    currents: dict[int, CurrentPoints],
    evals: dict[int, EvalRewards] | None = None,
    intervals: dict[int, list[job_duration.RunInterval]] | None = None,
) -> dict[int, RewardCurve]:
    """Each job's reward series against its running seconds (every point; `reached` and `_thin` use them);
    `evals` and `intervals`: the jobs' eval rewards and attempt intervals, when already read."""
    ids = [job.id for job in jobs]
    train = _train_points(session, ids, currents)
    evals = evals if evals is not None else eval_rewards_of_jobs(session, ids, currents)
    intervals = intervals if intervals is not None else job_duration.intervals_of_jobs(session, ids)
    now = datetime.now(UTC)
    curves = {}
    for job in jobs:
        points = [point for point in train[job.id] if a_time(point[2])]
        walls = {step: wall for step, _, wall in points}
        if intervals[job.id]:

            def second(wall: float, spans=intervals[job.id]) -> float:
                return job_duration.ran_until(spans, datetime.fromtimestamp(wall, UTC), now)
        else:
            start = job.started_at.replace(tzinfo=job.started_at.tzinfo or UTC).timestamp() if job.started_at else None
            origin = start if start is not None else (points[0][2] if points else 0.0)

            def second(wall: float, origin=origin) -> float:
                return max(0.0, wall - origin)

        series = evals[job.id]
        if series.steps:
            timed = [(s, v) for s, v in zip(series.steps, series.values, strict=True) if s in walls]
            curve = RewardCurve("eval", [s for s, _ in timed], [second(walls[s]) for s, _ in timed],
                                [v for _, v in timed])  # fmt: skip
        else:
            curve = RewardCurve(
                "train", [s for s, _, _ in points], [second(w) for _, _, w in points], [v for _, v, _ in points]
            )
        curves[job.id] = curve
    return curves


def reached(curve: RewardCurve, target: float | None) -> Reached:
    """The first point at or above the target."""
    if target is None:
        return Reached(None, None)
    for step, seconds, reward in zip(curve.steps, curve.seconds, curve.rewards, strict=True):
        if reward >= target:
            return Reached(seconds, step)
    return Reached(None, None)


def pick_target(
    jobs: Sequence[Job], curves: dict[int, RewardCurve], named: float | None, reference_id: int | None
) -> Target:
    """The caller's R, else the final reward of the set's native Flow-GRPO job (the speedup reference when it is
    one, else the lowest id); without one, no target."""
    if named is not None:
        return Target(named, None, NAMED)
    candidates = [
        job for job in jobs
        if job.algorithm == DEFAULT_ALGORITHM and job.executor == DEFAULT_EXECUTOR and curves[job.id].rewards
    ]  # fmt: skip
    if not candidates:
        return Target(None, None, "no target: the set has no native Flow-GRPO job with a reward; choose one")
    chosen = next((j for j in candidates if j.id == reference_id), min(candidates, key=lambda j: j.id))
    curve = curves[chosen.id]
    return Target(
        curve.rewards[-1],
        chosen.id,
        f"the final {curve.source} reward of #{chosen.id}, the native Flow-GRPO job of the set",
    )


def thinned(curve: RewardCurve, hit: Reached) -> RewardCurve:
    """The curve a chart draws: at most MAX_CURVE_POINTS points, keeping the one that reached R."""
    keep = curve.steps.index(hit.step) if hit.step is not None else None
    return _thin(curve, keep)
