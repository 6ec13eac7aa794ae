"""The advice: every executor's step time and peak memory at the spec's full size, predicted from a probe.

Torch-free, so the server computes the answer it shows (and the bench checks the same arithmetic). Per executor
(docs/advisor.md):

- time: the cost model (trainer/spec/cost_model.py) at the probe's measured unit costs, plus the reward phase
  (per sample × rows) and one optimizer step, plus the measured sync; scaled by the executor's calibration c,
  measured step time / that same formula at each probe point, interpolated bilinearly to the full K and rows
  and held at the nearest probed size beyond them (so a probe point's prediction is its measurement);
- samples/s: the step's global samples / predicted step seconds (the throughput metric's own definition);
- peak memory: resident bytes + the step peak, interpolated bilinearly through the four probe points
  (K ∈ {K₁, K₂} × rows ∈ {n₁, n₂}) and extrapolated to the full K and rows;
- the recommendation: the fastest row that fits the budget; rows within TIE of it prefer an exact class.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pydantic import BaseModel

from trainer.spec.cost_model import Costs, UnitCosts, step_cost
from trainer.spec.executor_choice import options_for
from trainer.spec.job import JobSpec
from trainer.spec.probe_report import Exactness, ExecutorProbe, MeasuredUnitCosts, ProbePoint, ProbeReport
from trainer.spec.probe_sizes import resized, trained_steps

TIE = 0.05  # predicted speeds this close count as equal (below the prediction's own error)
EXACT_CLASSES = ("E0", "E1")
GIB = 2**30


class ExecutorAdvice(BaseModel):
    executor: str
    step_seconds: float | None = None
    samples_per_s: float | None = None
    speedup: float | None = None  # over native's predicted samples/s on the same spec
    peak_memory_bytes: int | None = None
    fits_budget: bool = False
    exactness: Exactness | None = None
    gradient_rel_l2: float | None = None
    gradient_cosine: float | None = None
    calibration: float | None = None  # measured / cost model at the probe's sizes
    memory_by_trained: list[int] = []  # predicted peak memory at K = 1, 2, …, T−1
    recommended: bool = False
    reason: str
    error: str | None = None


class Advice(BaseModel):
    executors: list[ExecutorAdvice]
    recommended: str | None
    fits: bool
    summary: str
    budget_bytes: int | None
    trained: int
    samples_per_step: int


def size_text(value: int) -> str:
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value / 2**20:.1f} MiB"


def interpolated_costs(measured: Sequence[MeasuredUnitCosts]) -> Costs:
    """Row count → unit costs: the measured ones, else linear through the two nearest measured row counts."""
    by_rows = sorted(measured, key=lambda c: c.rows)

    def costs(rows: int) -> UnitCosts:
        exact = next((c for c in by_rows if c.rows == rows), None)
        if exact is not None or len(by_rows) == 1:
            chosen = exact or by_rows[0]
            scale = 1.0 if exact else rows / chosen.rows
            fields = (chosen.forward, chosen.forward_grad, chosen.backward, chosen.decode)
            return UnitCosts(*(value * scale for value in fields))
        below = [c for c in by_rows if c.rows < rows][-1:] or by_rows[:1]
        above = [c for c in by_rows if c.rows > rows][:1] or by_rows[-1:]
        if below[0] is not above[0]:
            a, b = below[0], above[0]
        else:  # outside the measured range: the two nearest at that end
            a, b = (by_rows[0], by_rows[1]) if rows < by_rows[0].rows else (by_rows[-2], by_rows[-1])
        w = (rows - a.rows) / (b.rows - a.rows)
        fields = ("forward", "forward_grad", "backward", "decode")
        return UnitCosts(*(getattr(a, f) + w * (getattr(b, f) - getattr(a, f)) for f in fields))

    return costs


def modelled_seconds(spec: JobSpec, name: str, report: ProbeReport, rows: int, sync: float) -> float:
    """The cost model's step at ``rows`` rows per rank, with the measured reward, optimizer and sync times."""
    fixed = report.reward_seconds_per_sample * rows + report.optimizer_seconds
    return step_cost(spec, options_for(spec, name), interpolated_costs(report.unit_costs), rows, fixed) + sync


def calibration(spec: JobSpec, probe: ExecutorProbe, report: ProbeReport, trained: int, rows: int) -> float:
    """Measured step seconds / the cost model's at the same size, per probe point, interpolated bilinearly to
    (``trained``, ``rows``) and held at the nearest probe size beyond them: at a probe point the prediction is that
    point's measurement; beyond the grid the cost model alone scales it (a ratio of noisy times is not extrapolated)."""
    ratios = {}
    for point in probe.points:
        at = resized(spec, point.trained, point.prompts, options_for(spec, probe.name))
        modelled = modelled_seconds(at, probe.name, report, point.rows, point.sync_seconds)
        ratios[(point.trained, point.rows)] = point.step_seconds / modelled
    return bilinear(ratios, trained, rows, extrapolate=False)


def axis_weights(values: Sequence[int], at: float) -> dict[int, float]:
    """Linear (Lagrange) weights of ``at`` over one or two measured values: extrapolates beyond them."""
    if len(values) == 1:
        return {values[0]: 1.0}
    low, high = values
    return {low: (high - at) / (high - low), high: (at - low) / (high - low)}


def bilinear(grid: dict[tuple[int, int], float], trained: float, rows: float, extrapolate: bool = True) -> float:
    """The bilinear function of K and rows through the probe points' values, at (``trained``, ``rows``); without
    ``extrapolate``, a size beyond the probed ones takes the nearest probed K and rows."""
    ks, ns = sorted({k for k, _ in grid}), sorted({n for _, n in grid})
    if len(ks) > 2 or len(ns) > 2 or len(grid) != len(ks) * len(ns):
        raise ValueError(f"the fit needs a full grid of probe points, got {sorted(grid)}")
    if not extrapolate:
        trained, rows = min(max(trained, ks[0]), ks[-1]), min(max(rows, ns[0]), ns[-1])
    wk, wn = axis_weights(ks, trained), axis_weights(ns, rows)
    return sum(grid[(k, n)] * wk[k] * wn[n] for k in ks for n in ns)


def step_peak(points: Sequence[ProbePoint], trained: float, rows: float) -> float:
    """The bilinear function of K and rows through the probe points' step peaks, at (``trained``, ``rows``)."""
    return bilinear({(p.trained, p.rows): p.peak_bytes for p in points}, trained, rows)


def predicted_memory(points: Sequence[ProbePoint], resident: int, trained: int, rows: int) -> int:
    return resident + max(0, round(step_peak(points, trained, rows)))


def exactness_text(row: ExecutorAdvice) -> str:
    if row.exactness == "E0":
        return "bitwise exact"
    if row.exactness == "E1":
        bound = f"{row.gradient_rel_l2:.0e}" if row.gradient_rel_l2 is not None else "1e-05"
        return f"exact to {bound}"
    cosine = f" (gradient cosine {row.gradient_cosine:.3f})" if row.gradient_cosine is not None else ""
    return f"approximate{cosine}"


def reason(row: ExecutorAdvice, budget: int | None) -> str:
    """The verdict in one sentence, e.g. 'lean_retain 1.31× but 46.0 GiB > 40.0 GiB budget'."""
    if row.error is not None and row.peak_memory_bytes is None:
        return f"{row.executor}: no prediction, {row.error}"
    speed = f"{row.speedup:.2f}×" if row.speedup is not None else "(no native row to compare with)"
    memory = size_text(row.peak_memory_bytes or 0)
    if not row.fits_budget and budget is not None:
        return f"{row.executor} {speed} but {memory} > {size_text(budget)} budget"
    return f"{row.executor} {speed}, {memory}, {exactness_text(row)}"


def executor_row(spec: JobSpec, probe: ExecutorProbe, report: ProbeReport) -> ExecutorAdvice:
    """One executor's prediction at full size (speedup and verdict are filled in against the others)."""
    base = {
        "executor": probe.name,
        "exactness": probe.exactness,
        "gradient_rel_l2": probe.gradient_rel_l2,
        "gradient_cosine": probe.gradient_cosine,
        "reason": "",
    }
    if not probe.points:
        return ExecutorAdvice(**base, error=probe.error or "the probe measured no step")
    algo = spec.algorithm
    rows = algo.prompts_per_step * algo.group_size // report.world_size
    full = trained_steps(spec)
    try:
        factor = calibration(spec, probe, report, full, rows)
        sync = statistics.mean(p.sync_seconds for p in probe.points)
        seconds = factor * modelled_seconds(spec, probe.name, report, rows, sync)
        by_k = [predicted_memory(probe.points, report.resident_bytes, k, rows) for k in range(1, algo.sampling_steps)]
        peak = predicted_memory(probe.points, report.resident_bytes, full, rows)
    except ValueError as exc:
        return ExecutorAdvice(**base, error=probe.error or str(exc))
    samples = algo.prompts_per_step * algo.group_size
    return ExecutorAdvice(
        **base,
        step_seconds=seconds,
        samples_per_s=samples / seconds,
        peak_memory_bytes=peak,
        calibration=factor,
        memory_by_trained=by_k,
        error=probe.error,
    )


def recommend(rows: Sequence[ExecutorAdvice]) -> ExecutorAdvice | None:
    """The fastest row that fits; a row within TIE of it with an exact class goes before an approximate one."""
    fitting = [r for r in rows if r.fits_budget and r.samples_per_s is not None]
    if not fitting:
        return None
    fastest = max(r.samples_per_s or 0.0 for r in fitting)
    close = [r for r in fitting if (r.samples_per_s or 0.0) >= fastest * (1 - TIE)]
    return max(close, key=lambda r: (r.exactness in EXACT_CLASSES, r.samples_per_s or 0.0))


def advise(spec: JobSpec, report: ProbeReport, budget_bytes: int | None) -> Advice:
    """The answer: one row per probed executor, the recommendation, and a summary sentence."""
    rows = [executor_row(spec, probe, report) for probe in report.executors]
    native = next((r for r in rows if r.executor == "native" and r.samples_per_s), None)
    for row in rows:
        if row.samples_per_s is not None:
            row.speedup = row.samples_per_s / native.samples_per_s if native and native.samples_per_s else None
            row.fits_budget = budget_bytes is None or (row.peak_memory_bytes or 0) <= budget_bytes
        row.reason = reason(row, budget_bytes)
    chosen = recommend(rows)
    if chosen is not None:
        chosen.recommended = True
        summary = f"recommended: {chosen.reason}"
    else:
        predicted = [r for r in rows if r.peak_memory_bytes is not None]
        smallest = min(predicted, key=lambda r: r.peak_memory_bytes or 0, default=None)
        budget = size_text(budget_bytes) if budget_bytes is not None else "the budget"
        summary = (
            f"no executor fits {budget}; the smallest requirement is {smallest.executor} at "
            f"{size_text(smallest.peak_memory_bytes or 0)}"
            if smallest
            else "no executor could be probed"
        )
    algo = spec.algorithm
    return Advice(
        executors=rows,
        recommended=chosen.executor if chosen else None,
        fits=chosen is not None,
        summary=summary,
        budget_bytes=budget_bytes,
        trained=trained_steps(spec),
        samples_per_step=algo.prompts_per_step * algo.group_size,
    )
