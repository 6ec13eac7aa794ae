"""The compare answer: every figure the compare page, `sfumato compare`, the jobs list and `submit --wait` show,
each defined once, here (samples/s in services.throughput, shared hosts in services.shared_hosts).

The API returns it as it is; the page and the CLI render it; nothing recomputes a figure on its own.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Job
from server.schemas.compare import CompareRow, Comparison, Definitions, RewardCurve, SharedHost, SpecDifference
from server.services import audited_cosine, job_duration, throughput, time_to_reward
from server.services.auth import Caller
from server.services.current_points import current_points_of_jobs
from server.services.errors import FieldErrors, NotFound
from server.services.eval_rewards import eval_rewards_of_jobs
from server.services.metric_figures import key_figures_of_jobs
from server.services.metric_reads import latest_points_of_pairs
from server.services.peak_memory import MEMORY_KEY, peak_memory_of
from server.services.scoping import scope_jobs
from server.services.shared_hosts import shared_with
from server.services.spec_differences import DEFINITION as DIFFERENCES_DEFINITION
from server.services.spec_differences import spec_differences
from server.services.speedup_reference import pick_reference
from trainer.spec.cost_model import bound_speedup

MAX_JOBS = 16
REWARD_KEY = "reward/mean"
DEFINITIONS = Definitions(
    samples_per_s=throughput.DEFINITION,
    warmup_steps=throughput.WARMUP_STEPS,
    speedup="samples/s over the samples/s of the reference job (reference_job_id): the one named by reference=, "
    "else the native job with the same spec apart from the executor, nearest in time, else the native job with "
    "the lowest id, whatever the order of the ids; null when the set has no native job and none is named, and "
    "for a job of another algorithm than the reference's (samples/s does not compare methods that do different "
    "work per sample: time_to_reward compares them)",
    bound="the analytical speedup of the job's executor over native on the job's own spec (cost model in "
    "forwards per sample per step); null for executors it does not model",
    audited_cosine=audited_cosine.DEFINITION,
    duration_s=job_duration.DEFINITION,
    time_to_reward=time_to_reward.DEFINITION,
    reward_seconds="a point's second is how long the job's trainer had run when it reported the point (the "
    "duration's intervals, cut at that moment; without them, from the job's start); an eval step is timed by the "
    "training point of the same step",
    shared_with="other jobs that held devices on a host this job held devices on, at an overlapping time",
    differences=DIFFERENCES_DEFINITION,
)


def parse_job_ids(raw: str) -> list[int]:
    """`1,2,3` → [1, 2, 3], each once, in order; at most MAX_JOBS."""
    ids: list[int] = []
    for part in (p.strip() for p in raw.split(",")):
        if not part:
            continue
        if not part.isdigit() or not 1 <= int(part) < 2**31:
            raise FieldErrors.one("jobs", f"{part!r} is not a job id; give ids separated by commas, e.g. jobs=1,2,3")
        ids.append(int(part))
    ids = list(dict.fromkeys(ids))
    if not ids:
        raise FieldErrors.one("jobs", "name at least one job id, e.g. jobs=1,2,3")
    if len(ids) > MAX_JOBS:
        raise FieldErrors.one("jobs", f"at most {MAX_JOBS} jobs at once; {len(ids)} given")
    return ids


def visible_jobs(session: Session, caller: Caller, job_ids: Sequence[int]) -> list[Job]:
    """The jobs, in the order asked; NotFound (404) naming the first the caller cannot see, as for one job."""
    found = {job.id: job for job in session.scalars(scope_jobs(select(Job).where(Job.id.in_(job_ids)), caller))}
    missing = [i for i in job_ids if i not in found]
    if missing:
        raise NotFound(f"job {missing[0]} not found")
    return [found[i] for i in job_ids]


def compare(
    session: Session,
    caller: Caller,
    job_ids: Sequence[int],
    reference: int | None = None,
    reward_target: float | None = None,
) -> Comparison:
    """One row per job, in the order asked, speedups over one reference (services.speedup_reference), the time
    each took to reach the reward target (services.time_to_reward: `reward_target`, else its default rule), and the
    spec fields that differ. Each figure is read for all the jobs at once, so the number of statements does not
    grow with the number of jobs. A named `reference` you may not see is 404; one outside the set 422."""
    if reference is not None and reference not in job_ids:
        visible_jobs(session, caller, [reference])
    jobs = visible_jobs(session, caller, job_ids)
    ids = [job.id for job in jobs]
    currents = current_points_of_jobs(session, ids)
    speeds = throughput.samples_per_s(session, ids, currents)
    intervals = job_duration.intervals_of_jobs(session, ids)
    durations = job_duration.durations_of(intervals)
    figures = key_figures_of_jobs(session, ids, [REWARD_KEY, MEMORY_KEY], currents)
    targets = [audited_cosine.AuditTarget(job.id, job.executor, job.advice_id) for job in jobs]
    finals = latest_points_of_pairs(
        session, [(i, REWARD_KEY) for i in ids] + audited_cosine.audit_pairs(targets), currents
    )
    evals = eval_rewards_of_jobs(session, ids, currents)
    shared = shared_with(session, ids)
    cosines = audited_cosine.audited_cosines(session, targets, finals)
    others = {s.job_id for rows in shared.values() for s in rows}
    visible_names = (
        dict(session.execute(scope_jobs(select(Job.id, Job.name).where(Job.id.in_(others)), caller)).all())
        if others
        else {}
    )
    picked = pick_reference(jobs, reference)
    base = speeds[picked.job.id] if picked else None
    curves = time_to_reward.reward_curves(session, jobs, currents, evals, intervals)
    target = time_to_reward.pick_target(jobs, curves, reward_target, picked.job.id if picked else None)
    rows = []
    for job in jobs:
        figure = figures[job.id]
        final = finals.get((job.id, REWARD_KEY))
        job_evals = evals[job.id]
        speed = speeds[job.id]
        same_method = picked is not None and job.algorithm == picked.job.algorithm
        speedup = speed / base if speed is not None and base and same_method else None
        bound = bound_speedup(job.spec)
        hit = time_to_reward.reached(curves[job.id], target.value)
        curve = time_to_reward.thinned(curves[job.id], hit)
        rows.append(
            CompareRow(
                id=job.id,
                name=job.name,
                status=job.status,
                executor=job.executor,
                algorithm=job.algorithm,
                steps=job.step,
                samples_per_s=speed,
                speedup=speedup,
                bound=bound,
                of_bound=speedup / bound if speedup is not None and bound else None,
                audited_cosine=cosines[job.id],
                peak_memory_bytes=peak_memory_of(figure),
                final_reward=final.value if final else None,
                best_reward=figure[REWARD_KEY].maximum if REWARD_KEY in figure else None,
                eval_reward=job_evals.values[-1] if job_evals.values else None,
                eval_step=job_evals.steps[-1] if job_evals.steps else None,
                started_at=job.started_at,
                ended_at=job.finished_at,
                duration_s=durations[job.id],
                time_to_reward_s=hit.seconds,
                time_to_reward_step=hit.step,
                reward_curve=RewardCurve(
                    source=curve.source, steps=curve.steps, seconds=curve.seconds, rewards=curve.rewards
                ),
                shared_with=[
                    SharedHost(job_id=s.job_id, name=visible_names.get(s.job_id), host=s.host) for s in shared[job.id]
                ],
            )
        )
    differences = [SpecDifference(field=f, values=v) for f, v in spec_differences([job.spec for job in jobs])]
    return Comparison(
        jobs=rows,
        native_job_id=picked.job.id if picked else None,
        reference=f"speedup over #{picked.job.id}" if picked else "no native job: no speedup",
        reference_reason=picked.reason if picked else None,
        reward_target=target.value,
        reward_target_job_id=target.job_id,
        reward_target_reason=target.reason,
        differences=differences,
        definitions=DEFINITIONS,
    )
