"""An experiment's summary: per cell group (the cells that differ only in seed) each figure's mean and 95%
interval inside what the figure can be, the speedup over native paired within blocks, a verdict per executor
where one is justified, and the cells whose timing is not comparable (other hardware, a shared or loaded host,
a drifting native). Every per-job figure is the compare answer's (services.compare), so the summary
and the compare page show the same numbers; this module only aggregates them (services.statistics).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from server.models import Allocation, Device, Experiment, Job
from server.schemas.compare import CompareRow
from server.schemas.experiments import CellFlag, CellGroup, ExperimentCell, ExperimentSummary, Interval, Verdict
from server.services import statistics
from server.services.audited_cosine import group_words
from server.services.auth import Caller
from server.services.compare import DEFINITIONS, compare
from server.services.current_points import current_points_of_jobs
from server.services.experiment_matrix import EXECUTOR_PATH, SEED_PATH, group_key
from server.services.metric_figures import key_figures_of_jobs
from server.services.speedup_reference import NATIVE
from trainer.spec.reward_ranges import weighted_reward_range

SIGNIFICANCE = 0.05
SEEDS_FOR_VERDICT = 3  # below this a t interval is too wide, and too sensitive to one slow cell, to bet on
LOAD_THRESHOLD = 1.0  # a cell's mean 1-minute load average per core above this: the host was busy beside it
DRIFT_THRESHOLD = 0.10  # native's samples/s moving by more than this between its first and last block
LOAD_KEY = "host/load_per_core"
TIMES = "\u00d7"  # the multiplication sign of "1.31x faster"
ABOVE_BOUND = "above bound: timing suspect"
METHOD = (
    "95% intervals over a group's seeds, Student's t with n-1 degrees of freedom. Positive figures (samples/s, "
    "peak memory, speedups): the geometric mean, with the interval of the mean log exponentiated, so it never "
    "reaches 0. Rewards whose range is declared: mean ± t(0.975, n-1)·s/sqrt(n), clipped to that range. "
    "Speedup: the ratio of samples/s of the two cells of one block (one seed, every setting run back to back, "
    "counterbalanced), over the blocks both groups ran. Reward: the paired t-test (two-sided) of the same "
    "seeds' eval reward (final reward when a cell has no eval); 'indistinguishable' when p ≥ "
    f"{SIGNIFICANCE}. No verdict below {SEEDS_FOR_VERDICT} paired seeds, nor on a speedup above its "
    f"executor's analytical bound by more than its interval ('{ABOVE_BOUND}'). Flags: a cell whose host's "
    f"1-minute load average per core averaged above {LOAD_THRESHOLD:g} while it ran; native samples/s moving "
    f"by more than {DRIFT_THRESHOLD:.0%} between the first and the last block. Time to reward R: the seeds that "
    "reached R, as a positive figure (geometric mean, log interval); a seed that never reached R is counted in "
    "'reached', not in the interval."
)


@dataclass(frozen=True)
class CellFigures:
    """One cell: its axis values, its seed, and its compare row."""

    values: dict[str, Any]
    seed: int
    row: CompareRow
    position: int | None = None  # its place in the queue order
    host_load: float | None = None  # mean 1-minute load average per core while it ran
    reward_range: tuple[float, float] | None = None  # the range its spec's reward declares


def _interval(result: statistics.MeanInterval) -> Interval:
    return Interval(mean=result.mean, low=result.low, high=result.high, n=result.n)


def _positive(values: Sequence[float | None]) -> Interval:
    return _interval(statistics.log_interval([v for v in values if v is not None]))


def _reward(values: Sequence[float | None], reward_range: tuple[float, float] | None) -> Interval:
    known = [v for v in values if v is not None]
    if reward_range is None:
        return _interval(statistics.mean_interval(known))
    return _interval(statistics.bounded_interval(known, *reward_range))


def group_label(values: dict[str, Any]) -> str:
    """`lean_retain, algorithm.group_size=4`: the executor by name, the other non-seed axes as path=value."""
    parts = [str(v) if p == EXECUTOR_PATH else f"{p}={v}" for p, v in values.items() if p != SEED_PATH]
    return ", ".join(parts) or "all cells"


def _native_key(values: dict[str, Any]) -> tuple[tuple[str, str], ...] | None:
    if EXECUTOR_PATH not in values or values[EXECUTOR_PATH] == NATIVE:
        return None
    return group_key({**values, EXECUTOR_PATH: NATIVE})


def _pairs(group: list[CellFigures], native: list[CellFigures], figure: str) -> list[tuple[float, float]]:
    """(group's, native's) figure for each seed both have it for."""
    theirs = {c.seed: getattr(c.row, figure) for c in native}
    pairs = []
    for cell in group:
        mine, base = getattr(cell.row, figure), theirs.get(cell.seed)
        if mine is not None and base is not None:
            pairs.append((mine, base))
    return pairs


def withheld_because(speedup: Interval, bound: float | None) -> str | None:
    """Why no verdict is given on this speedup: too few paired seeds, or a measured speedup above the
    executor's analytical bound by more than its interval (the timing, not the executor, made it)."""
    if speedup.n < SEEDS_FOR_VERDICT:
        seeds = f"{speedup.n} paired seed{'s' if speedup.n != 1 else ''}"
        return f"no verdict: {seeds}, a verdict needs {SEEDS_FOR_VERDICT}"
    if bound is not None and speedup.low is not None and speedup.low > bound:
        return f"{ABOVE_BOUND} (bound {bound:.2f}{TIMES}), no verdict"
    return None


def _speed_words(speedup: Interval, withheld: str | None) -> str:
    if speedup.mean is None:
        return "no samples/s to compare with native yet"
    if speedup.low is None or speedup.high is None:
        return f"{speedup.mean:.2f}{TIMES} native's samples/s (1 seed: no interval; {withheld})"
    figure = f"{speedup.mean:.2f}{TIMES} [{speedup.low:.2f}, {speedup.high:.2f}]"
    if withheld:
        return f"{figure} over native ({withheld})"
    if speedup.low > 1:
        return f"{figure} faster than native"
    if speedup.high < 1:
        return f"{figure} slower than native"
    return f"{figure}, speed indistinguishable from native"


def verdict(label: str, group: list[CellFigures], native: list[CellFigures]) -> Verdict:
    """The executor group against native over their shared seeds, in a sentence that names the test."""
    speeds = _pairs(group, native, "samples_per_s")
    speedup = _interval(statistics.log_interval([mine / base for mine, base in speeds if base > 0]))
    bound = group[0].row.bound
    withheld = withheld_because(speedup, bound)
    evals = _pairs(group, native, "eval_reward")
    reward = "eval_reward" if evals and len(evals) == len(_pairs(group, native, "final_reward")) else "final_reward"
    pairs = evals if reward == "eval_reward" else _pairs(group, native, "final_reward")
    p_value = statistics.paired_t_test([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None
    name = reward.replace("_", " ")
    if p_value is None:
        reward_words = f"{name} not tested ({len(pairs)} paired seed{'s' if len(pairs) != 1 else ''})"
    elif withheld and speedup.n < SEEDS_FOR_VERDICT:
        reward_words = f"{name} not judged (paired t-test, p = {p_value:.2f})"
    elif p_value >= SIGNIFICANCE:
        reward_words = f"{name} indistinguishable (paired t-test, p = {p_value:.2f})"
    else:
        difference = sum(a - b for a, b in pairs) / len(pairs)
        reward_words = f"{name} differs by {difference:+.4g} (paired t-test, p = {p_value:.2g})"
    audited = group_words([cell.row.audited_cosine for cell in group])
    return Verdict(
        label=label,
        text=f"{label}: {_speed_words(speedup, withheld)}"
        + (f", gradient {audited}" if audited else "")
        + f", {reward_words}",
        audited_cosine=audited,
        speedup=speedup,
        bound=bound,
        given=withheld is None and speedup.mean is not None,
        withheld=withheld,
        reward=reward,
        reward_test="paired t-test" if p_value is not None else None,
        p_value=p_value,
    )


def _flags(cells: list[CellFigures], device_models: dict[int, str]) -> list[CellFlag]:
    """Cells that ran on another device model than most cells, or beside another job on a host."""
    flags: list[CellFlag] = []
    models = [device_models[c.row.id] for c in cells if c.row.id in device_models]
    common = max(sorted(set(models)), key=models.count) if models else None
    for cell in cells:
        label = ", ".join(f"{p}={v}" for p, v in cell.values.items())
        model = device_models.get(cell.row.id)
        if model is not None and model != common:
            flags.append(
                CellFlag(job_id=cell.row.id, cell=label, problem=f"ran on {model}; most cells ran on {common}")
            )
        for other in cell.row.shared_with:
            problem = f"shared host {other.host} with job {other.job_id} while it ran"
            flags.append(CellFlag(job_id=cell.row.id, cell=label, problem=problem))
        if cell.host_load is not None and cell.host_load > LOAD_THRESHOLD:
            problem = f"host load {cell.host_load:.2f} per core while it ran (above {LOAD_THRESHOLD:g})"
            flags.append(CellFlag(job_id=cell.row.id, cell=label, problem=problem))
    return flags


def _drift_flags(groups: dict[tuple[tuple[str, str], ...], list[CellFigures]]) -> list[CellFlag]:
    """Per native group: its samples/s in the last block against the first (queue order), flagged beyond
    DRIFT_THRESHOLD on the last block's cell: the host itself changed while the experiment ran."""
    flags: list[CellFlag] = []
    for members in groups.values():
        timed = [c for c in members if c.position is not None and c.row.samples_per_s and c.row.executor == NATIVE]
        if len(timed) < 2:
            continue
        first, last = min(timed, key=lambda c: c.position or 0), max(timed, key=lambda c: c.position or 0)
        drift = last.row.samples_per_s / first.row.samples_per_s - 1  # type: ignore[operator]
        if abs(drift) > DRIFT_THRESHOLD:
            problem = (
                f"native samples/s {drift:+.0%} from the first block (job {first.row.id}) to the last: the host "
                f"drifted by more than {DRIFT_THRESHOLD:.0%}"
            )
            label = ", ".join(f"{p}={v}" for p, v in last.values.items())
            flags.append(CellFlag(job_id=last.row.id, cell=label, problem=problem))
    return flags


def reached_words(rows: Sequence[CompareRow], target: float | None, reason: str) -> str:
    """'2 of 3 seeds reached R', or why no seed has a time to reward."""
    if target is None:
        return reason
    reached = sum(row.time_to_reward_s is not None for row in rows)
    return f"{reached} of {len(rows)} seed{'s' if len(rows) != 1 else ''} reached R"


def summarize(
    cells: Sequence[CellFigures],
    device_models: dict[int, str],
    reward_target: float | None = None,
    reward_target_reason: str = "",
) -> ExperimentSummary:
    """The summary of cells whose compare rows are known (pure: the fixture tests call it directly); the time to
    reward is the rows' own, to the compare answer's R (`reward_target`)."""
    groups: dict[tuple[tuple[str, str], ...], list[CellFigures]] = {}
    for cell in cells:
        groups.setdefault(group_key(cell.values), []).append(cell)
    out: list[CellGroup] = []
    verdicts: list[Verdict] = []
    for members in groups.values():
        values = {p: v for p, v in members[0].values.items() if p != SEED_PATH}
        label = group_label(values)
        native_key = _native_key(members[0].values)
        native = groups.get(native_key) if native_key else None
        judged = verdict(label, members, native) if native else None
        if judged:
            verdicts.append(judged)
        rows = [m.row for m in members]
        out.append(
            CellGroup(
                label=label,
                values=values,
                executor=rows[0].executor,
                job_ids=[r.id for r in rows],
                seeds=[m.seed for m in members],
                samples_per_s=_positive([r.samples_per_s for r in rows]),
                speedup=judged.speedup if judged else None,
                audited_cosine=group_words([r.audited_cosine for r in rows]),
                peak_memory_bytes=_positive([r.peak_memory_bytes for r in rows]),
                final_reward=_reward([r.final_reward for r in rows], members[0].reward_range),
                eval_reward=_reward([r.eval_reward for r in rows], members[0].reward_range),
                reward_range=list(members[0].reward_range) if members[0].reward_range else None,
                time_to_reward_s=_positive([r.time_to_reward_s for r in rows]),
                reached_reward=reached_words(rows, reward_target, reward_target_reason),
            )
        )
    return ExperimentSummary(
        groups=out,
        verdicts=verdicts,
        flags=_flags(list(cells), device_models) + _drift_flags(groups),
        jobs=[c.row for c in cells],
        device_models=device_models,
        host_loads={c.row.id: c.host_load for c in cells if c.host_load is not None},
        seeds_for_verdict=SEEDS_FOR_VERDICT,
        reward_target=reward_target,
        reward_target_reason=reward_target_reason,
        definitions=DEFINITIONS,
        method=METHOD,
    )


def verdict_warnings(axes: Sequence[tuple[str, int]]) -> list[str]:
    """From (path, value count) axes: an experiment that compares executors over too few seeds is run, but it
    is told up front that its summary will give values and no verdict."""
    if not any(path.startswith("executor.") for path, _ in axes):
        return []
    seeds = dict(axes).get(SEED_PATH, 1)
    if seeds >= SEEDS_FOR_VERDICT:
        return []
    return [
        f"{seeds} seed{'s' if seeds != 1 else ''}: no verdict will be given on the executors; a verdict needs "
        f"{SEEDS_FOR_VERDICT} seeds (add an axis seed=1,2,3)"
    ]


def device_models(session: Session, job_ids: Sequence[int]) -> dict[int, str]:
    """The device model(s) each job's latest attempt held ('A + B' when it held several kinds)."""
    rows = session.execute(
        select(Allocation.job_id, Device.model)
        .join(Device, Device.id == Allocation.device_id)
        .join(Job, Job.id == Allocation.job_id)
        .where(Allocation.job_id.in_(job_ids), Allocation.attempt == Job.attempt)
        .distinct()
    )
    models: dict[int, set[str]] = {}
    for job_id, model in rows:
        models.setdefault(job_id, set()).add(model)
    return {job_id: " + ".join(sorted(names)) for job_id, names in models.items()}


def experiment_summary(
    session: Session, caller: Caller, experiment: Experiment, cells: Sequence[ExperimentCell]
) -> ExperimentSummary:
    """The summary from the compare answer for the experiment's jobs (in matrix order)."""
    ids = [cell.job_id for cell in cells]
    answer = compare(session, caller, ids) if ids else None
    rows = {row.id: row for row in answer.jobs} if answer else {}
    base_seed = int(experiment.base_spec.get("seed", 0) or 0) if isinstance(experiment.base_spec, dict) else 0
    loads = host_loads(session, ids)
    ranges = reward_ranges(session, ids)
    figures = [
        CellFigures(
            values=cell.values,
            seed=int(cell.values.get(SEED_PATH, base_seed)),
            row=rows[cell.job_id],
            position=cell.position,
            host_load=loads.get(cell.job_id),
            reward_range=ranges.get(cell.job_id),
        )
        for cell in cells
    ]
    target, reason = (answer.reward_target, answer.reward_target_reason) if answer else (None, "")
    return summarize(figures, device_models(session, ids), target, reason)


def host_loads(session: Session, job_ids: Sequence[int]) -> dict[int, float]:
    """Each job's mean of the 1-minute load average per core its trainer sampled at every step."""
    currents = current_points_of_jobs(session, job_ids)
    figures = key_figures_of_jobs(session, job_ids, [LOAD_KEY], currents)
    return {job_id: keys[LOAD_KEY].mean for job_id, keys in figures.items() if LOAD_KEY in keys}


def reward_ranges(session: Session, job_ids: Sequence[int]) -> dict[int, tuple[float, float]]:
    """The range each job's reward declares (trainer.spec.reward_ranges), where it declares one."""
    ranges: dict[int, tuple[float, float]] = {}
    for job_id, spec in session.execute(select(Job.id, Job.spec).where(Job.id.in_(job_ids))):
        rewards = spec.get("reward") if isinstance(spec, dict) else None
        declared = weighted_reward_range(
            (str(r.get("name")), float(r.get("weight", 1.0))) for r in rewards or [] if isinstance(r, dict)
        )
        if declared is not None:
            ranges[job_id] = declared
    return ranges
