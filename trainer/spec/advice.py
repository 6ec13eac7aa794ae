"""The advice's arithmetic: every executor's step time and peak memory at the spec's full size, predicted from a
probe, once per timed round.

Torch-free, so the server computes the answer it shows from it (server/services/advice_verdict.py: the intervals
and the recommendation) and the bench checks the same arithmetic. Per executor (docs/advisor.md):

- time: the cost model (trainer/spec/cost_model.py) at the probe's measured unit costs, plus the reward phase
  (per sample × rows) and one optimizer step, plus the measured sync; scaled by the executor's calibration c,
  measured step time / that same formula at each probe point, interpolated bilinearly to the full K and rows
  and held at the nearest probed size beyond them (so a probe point's prediction is its measurement);
- one prediction per round: round r's calibration uses round r's step time at every probe point (the probe ran
  round r of every executor back to back), so round r's speedup pairs two executors timed side by side;
- samples/s: the step's global samples / predicted step seconds (the throughput metric's own definition), the
  geometric mean over the rounds; the speedup is its ratio to native's (the geometric mean of the rounds' ones);
- peak memory: resident bytes + the step peak, interpolated bilinearly through the four probe points
  (K ∈ {K₁, K₂} × rows ∈ {n₁, n₂}) and extrapolated to the full K and rows.
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


class ExecutorPrediction(BaseModel):
    executor: str
    step_seconds: float | None = None
    samples_per_s: float | None = None
    speedup: float | None = None  # over native's predicted samples/s on the same spec
    peak_memory_bytes: int | None = None
    exactness: Exactness | None = None
    gradient_rel_l2: float | None = None
    gradient_cosine: float | None = None
    calibration: float | None = None  # measured / cost model at the probe's sizes
    memory_by_trained: list[int] = []  # predicted peak memory at K = 1, 2, …, T−1
    round_samples_per_s: list[float] = []  # the prediction from each timed round alone
    round_speedups: list[float] = []  # each round's over native's same round; none when their rounds differ
    error: str | None = None


class Prediction(BaseModel):
    executors: list[ExecutorPrediction]
    trained: int
    samples_per_step: int


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


def round_calibrations(
    spec: JobSpec, probe: ExecutorProbe, report: ProbeReport, trained: int, rows: int
) -> list[float]:
    """Per timed round: measured step seconds / the cost model's at the same size, per probe point, interpolated
    bilinearly to (``trained``, ``rows``) and held at the nearest probe size beyond them: at a probe point the
    prediction is that point's measurement; beyond the grid the cost model alone scales it (a ratio of noisy times
    is not extrapolated). ValueError when the points timed different numbers of rounds."""
    modelled = {}
    for point in probe.points:
        at = resized(spec, point.trained, point.prompts, options_for(spec, probe.name))
        modelled[(point.trained, point.rows)] = modelled_seconds(at, probe.name, report, point.rows, point.sync_seconds)
    counts = {len(point.rounds()) for point in probe.points}
    if len(counts) != 1:
        raise ValueError(f"the probe points timed different numbers of rounds ({sorted(counts)})")
    return [
        bilinear(
            {(p.trained, p.rows): p.rounds()[r] / modelled[(p.trained, p.rows)] for p in probe.points},
            trained,
            rows,
            extrapolate=False,
        )
        for r in range(counts.pop())
    ]


def calibration(spec: JobSpec, probe: ExecutorProbe, report: ProbeReport, trained: int, rows: int) -> float:
    """The rounds' calibrations' geometric mean: the factor the predicted step time carries."""
    return statistics.geometric_mean(round_calibrations(spec, probe, report, trained, rows))


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


def executor_row(spec: JobSpec, probe: ExecutorProbe, report: ProbeReport) -> ExecutorPrediction:
    """One executor's prediction at full size, per round and over the rounds (speedups are filled in against
    native's)."""
    base = {
        "executor": probe.name,
        "exactness": probe.exactness,
        "gradient_rel_l2": probe.gradient_rel_l2,
        "gradient_cosine": probe.gradient_cosine,
    }
    if not probe.points:
        return ExecutorPrediction(**base, error=probe.error or "the probe measured no step")
    algo = spec.algorithm
    rows = algo.prompts_per_step * algo.group_size // report.world_size
    full = trained_steps(spec)
    try:
        factors = round_calibrations(spec, probe, report, full, rows)
        sync = statistics.mean(p.sync_seconds for p in probe.points)
        modelled = modelled_seconds(spec, probe.name, report, rows, sync)
        by_k = [predicted_memory(probe.points, report.resident_bytes, k, rows) for k in range(1, algo.sampling_steps)]
        peak = predicted_memory(probe.points, report.resident_bytes, full, rows)
    except ValueError as exc:
        return ExecutorPrediction(**base, error=probe.error or str(exc))
    samples = algo.prompts_per_step * algo.group_size
    rounds = [samples / (factor * modelled) for factor in factors]
    factor = statistics.geometric_mean(factors)
    return ExecutorPrediction(
        **base,
        step_seconds=factor * modelled,
        samples_per_s=samples / (factor * modelled),
        peak_memory_bytes=peak,
        calibration=factor,
        memory_by_trained=by_k,
        round_samples_per_s=rounds,
        error=probe.error,
    )


def predict(spec: JobSpec, report: ProbeReport) -> Prediction:
    """One row per probed executor; each predicted row's speedup over native's, overall and round by round."""
    rows = [executor_row(spec, probe, report) for probe in report.executors]
    native = next((r for r in rows if r.executor == "native" and r.samples_per_s), None)
    for row in rows:
        if row.samples_per_s is None or native is None or not native.samples_per_s:
            continue
        row.speedup = row.samples_per_s / native.samples_per_s
        if len(row.round_samples_per_s) == len(native.round_samples_per_s):
            row.round_speedups = [
                mine / theirs for mine, theirs in zip(row.round_samples_per_s, native.round_samples_per_s, strict=True)
            ]
    algo = spec.algorithm
    return Prediction(
        executors=rows, trained=trained_steps(spec), samples_per_step=algo.prompts_per_step * algo.group_size
    )
