"""An experiment's summary: per cell group (the cells that differ only in seed) the mean and 95% interval of
each figure, the speedup over native from the paired seeds, a verdict per executor, and the cells whose
timing is not comparable. Every per-job figure is the compare answer's (services.compare), so the summary
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
from server.services.auth import Caller
from server.services.compare import DEFINITIONS, NATIVE, compare
from server.services.experiment_matrix import EXECUTOR_PATH, SEED_PATH, group_key

SIGNIFICANCE = 0.05
TIMES = "\u00d7"  # the multiplication sign of "1.31x faster"
METHOD = (
    "95% intervals: mean ± t(0.975, n-1)·s/sqrt(n) over a group's seeds (Student's t). Speedup: for each seed run "
    "both by the group and by the native group with the same other values, samples/s over native's; the "
    "geometric mean of these ratios, with the interval of the mean log ratio, exponentiated. Reward: the "
    f"paired t-test (two-sided) of the same seeds' eval reward (final reward when a cell has no eval); "
    f"'indistinguishable' when p ≥ {SIGNIFICANCE}."
)


@dataclass(frozen=True)
class CellFigures:
    """One cell: its axis values, its seed, and its compare row."""

    values: dict[str, Any]
    seed: int
    row: CompareRow


def _interval(values: Sequence[float | None]) -> Interval:
    known = [v for v in values if v is not None]
    result = statistics.mean_interval(known)
    return Interval(mean=result.mean, low=result.low, high=result.high, n=result.n)


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


def _speed_words(speedup: Interval) -> str:
    if speedup.mean is None:
        return "no samples/s to compare with native yet"
    if speedup.low is None or speedup.high is None:
        return f"{speedup.mean:.2f}{TIMES} native's samples/s (1 seed: no interval)"
    figure = f"{speedup.mean:.2f}{TIMES} [{speedup.low:.2f}, {speedup.high:.2f}]"
    if speedup.low > 1:
        return f"{figure} faster than native"
    if speedup.high < 1:
        return f"{figure} slower than native"
    return f"{figure}, speed indistinguishable from native"


def verdict(label: str, group: list[CellFigures], native: list[CellFigures]) -> Verdict:
    """The executor group against native over their shared seeds, in a sentence that names the test."""
    speeds = _pairs(group, native, "samples_per_s")
    ratio = statistics.ratio_interval([mine / base for mine, base in speeds if base > 0])
    speedup = Interval(mean=ratio.mean, low=ratio.low, high=ratio.high, n=ratio.n)
    evals = _pairs(group, native, "eval_reward")
    reward = "eval_reward" if evals and len(evals) == len(_pairs(group, native, "final_reward")) else "final_reward"
    pairs = evals if reward == "eval_reward" else _pairs(group, native, "final_reward")
    p_value = statistics.paired_t_test([a for a, _ in pairs], [b for _, b in pairs]) if pairs else None
    name = reward.replace("_", " ")
    if p_value is None:
        reward_words = f"{name} not tested ({len(pairs)} paired seed{'s' if len(pairs) != 1 else ''})"
    elif p_value >= SIGNIFICANCE:
        reward_words = f"{name} indistinguishable (paired t-test, p = {p_value:.2f})"
    else:
        difference = sum(a - b for a, b in pairs) / len(pairs)
        reward_words = f"{name} differs by {difference:+.4g} (paired t-test, p = {p_value:.2g})"
    return Verdict(
        label=label,
        text=f"{label}: {_speed_words(speedup)}, {reward_words}",
        speedup=speedup,
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
    return flags


def summarize(cells: Sequence[CellFigures], device_models: dict[int, str]) -> ExperimentSummary:
    """The summary of cells whose compare rows are known (pure: the fixture tests call it directly)."""
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
                samples_per_s=_interval([r.samples_per_s for r in rows]),
                speedup=judged.speedup if judged else None,
                peak_memory_bytes=_interval([r.peak_memory_bytes for r in rows]),
                final_reward=_interval([r.final_reward for r in rows]),
                eval_reward=_interval([r.eval_reward for r in rows]),
            )
        )
    return ExperimentSummary(
        groups=out,
        verdicts=verdicts,
        flags=_flags(list(cells), device_models),
        jobs=[c.row for c in cells],
        device_models=device_models,
        definitions=DEFINITIONS,
        method=METHOD,
    )


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
    rows = {row.id: row for row in compare(session, caller, ids).jobs} if ids else {}
    base_seed = int(experiment.base_spec.get("seed", 0) or 0) if isinstance(experiment.base_spec, dict) else 0
    figures = [
        CellFigures(values=cell.values, seed=int(cell.values.get(SEED_PATH, base_seed)), row=rows[cell.job_id])
        for cell in cells
    ]
    return summarize(figures, device_models(session, ids))
