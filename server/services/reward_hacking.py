"""The reward-hacking alarm: a training job whose training reward keeps rising while a held-out reward falls.

Definition (docs/evaluation.md), with W the job's `samples.every`, N = settings.reward_hacking_evaluations and
D = settings.reward_hacking_min_drop:
- the training reward at step s, T(s): the mean of `reward/mean` over the training steps s-W+1..s (none there:
  undefined);
- a held-out series H: the in-training evaluation (the mean reward of each eval step's samples, on the spec's fixed
  eval prompts), and each (prompt set, reward) of the job's evaluation jobs against their checkpoint's step;
- the alarm fires on H at N consecutive points s_1 < ... < s_N of H where T is defined when
  T(s_1) < T(s_2) < ... < T(s_N) and H(s_1) - H(s_N) > D.

It is checked when the evidence grows (an eval step's samples complete, an evaluation reported, the job ended) and
recorded once, with its `job.reward_hacking` webhook deliveries in the same unit of work: a job raises it once.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from server.config import Settings
from server.models import Job, RewardHackingAlarm
from server.schemas.evaluations import RecordedAlarm, RewardHackingOut, StepSeries
from server.services.eval_rewards import eval_rewards
from server.services.evaluation_reads import evaluation_curve
from server.services.metric_reads import metric_series
from server.services.webhook_events import queue_job_alarm
from server.services.webhook_payloads import JOB_REWARD_HACKING
from server.states import JobKind

IN_TRAINING_EVAL = "in-training eval"
TRAINING_KEY = "reward/mean"
ALL_POINTS = 10**7


@dataclass(frozen=True)
class Firing:
    series: str
    first_step: int
    last_step: int
    training_rise: float
    held_out_drop: float


def training_reward(steps: list[int], values: list[float], at: list[int], window: int) -> dict[int, float]:
    """T(s) for each s of `at` with a training step in s-window+1..s."""
    out = {}
    for s in at:
        inside = [v for step, v in zip(steps, values, strict=True) if s - window < step <= s]
        if inside:
            out[s] = sum(inside) / len(inside)
    return out


def first_firing(training: dict[int, float], held_out: StepSeries, evaluations: int, min_drop: float) -> Firing | None:
    """The first window of `evaluations` consecutive points of `held_out` (T defined) where the alarm fires."""
    points = [(s, v) for s, v in zip(held_out.steps, held_out.values, strict=True) if s in training]
    for start in range(len(points) - evaluations + 1):
        window = points[start : start + evaluations]
        rising = all(training[a] < training[b] for (a, _), (b, _) in pairwise(window))
        drop = window[0][1] - window[-1][1]
        if rising and drop > min_drop:
            first, last = window[0][0], window[-1][0]
            return Firing(held_out.key, first, last, training[last] - training[first], drop)
    return None


def held_out_series(session: Session, job: Job, complete_before: int | None) -> list[StepSeries]:
    """The in-training evaluation (its steps before `complete_before` only, when given: a later step's samples
    may still be arriving) and every (prompt set, reward) of the job's reported evaluations."""
    evals = eval_rewards(session, job.id)
    pairs = [
        (s, v) for s, v in zip(evals.steps, evals.values, strict=True) if complete_before is None or s < complete_before
    ]
    series = [StepSeries(key=IN_TRAINING_EVAL, steps=[s for s, _ in pairs], values=[v for _, v in pairs])]
    return series + evaluation_curve(session, job.id).series


def _window(job: Job) -> int:
    return int((job.spec.get("samples") or {}).get("every", 5))


def reward_hacking(
    session: Session, settings: Settings, job: Job, complete_before: int | None = None
) -> RewardHackingOut:
    """The two curves and the verdict as recorded (`fired` once the alarm has been recorded for the job)."""
    held_out = [s for s in held_out_series(session, job, complete_before) if s.steps]
    steps = sorted({s for series in held_out for s in series.steps})
    reported = metric_series(session, job.id, [TRAINING_KEY], ALL_POINTS).series[0]
    values = [v for v in reported.values if v is not None]
    steps_with_values = [s for s, v in zip(reported.steps, reported.values, strict=True) if v is not None]
    training = training_reward(steps_with_values, values, steps, _window(job))
    out = RewardHackingOut(
        fired=False,
        evaluations=settings.reward_hacking_evaluations,
        min_drop=settings.reward_hacking_min_drop,
        training=StepSeries(key="training reward/mean", steps=list(training), values=list(training.values())),
        held_out=held_out,
    )
    alarm = recorded_alarm(session, job.id)
    return out if alarm is None else out.model_copy(update=alarm.model_dump())


def recorded_alarm(session: Session, job_id: int) -> RecordedAlarm | None:
    """The job's alarm as recorded when it fired (the job page's banner); None while it has not."""
    alarm = session.get(RewardHackingAlarm, job_id)
    return None if alarm is None else RecordedAlarm.model_validate(alarm, from_attributes=True)


def check_reward_hacking(session: Session, settings: Settings, job: Job, complete_before: int | None = None) -> bool:
    """Record the alarm and queue its webhook event if it fires now and was not recorded before; True if it is
    (now or already) raised. The caller commits."""
    if job.kind != JobKind.TRAIN:
        return False
    if session.get(RewardHackingAlarm, job.id) is not None:
        return True
    answer = reward_hacking(session, settings, job, complete_before)
    training = dict(zip(answer.training.steps, answer.training.values, strict=True))
    for series in answer.held_out:
        firing = first_firing(training, series, settings.reward_hacking_evaluations, settings.reward_hacking_min_drop)
        if firing is not None:
            return _record(session, job, firing)
    return False


def _record(session: Session, job: Job, firing: Firing) -> bool:
    """One alarm row per job: a concurrent check that recorded it first wins, and this one adds nothing."""
    try:
        with session.begin_nested():
            session.add(
                RewardHackingAlarm(
                    job_id=job.id, series=firing.series[:300], first_step=firing.first_step,
                    last_step=firing.last_step, training_rise=firing.training_rise,
                    held_out_drop=firing.held_out_drop,
                )
            )  # fmt: skip
            session.flush()
    except IntegrityError:
        return True
    text = (
        f"Sfumato: job {job.id} ({job.name}) may be reward hacking: its training reward rose by "
        f"{firing.training_rise:.4f} while {firing.series} fell by {firing.held_out_drop:.4f} "
        f"from step {firing.first_step} to {firing.last_step}"
    )
    queue_job_alarm(session, job, JOB_REWARD_HACKING, text)
    return True


def alarmed_jobs(session: Session, job_ids: list[int]) -> set[int]:
    """Which of the jobs have raised the alarm (the jobs list's marker)."""
    if not job_ids:
        return set()
    return set(session.scalars(select(RewardHackingAlarm.job_id).where(RewardHackingAlarm.job_id.in_(job_ids))))
