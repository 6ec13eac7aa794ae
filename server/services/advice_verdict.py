"""The advice's answer from its prediction (trainer/spec/advice.py): each row's intervals over the probe's rounds,
whether it fits the budget, the recommendation, and the sentences that say why.

The intervals are the experiments' log-scale intervals (services/statistics.log_interval) of the rounds'
predictions: samples/s from each round alone, and the speedup of each round over native's same round, paired
because the probe ran round r of every executor back to back. A faster executor is recommended only when it is
faster beyond doubt: the lower end of its interval above the upper end of every other row that fits (native's
speedup is exactly 1). Otherwise the exact executor, native, is, and the answer names the intervals that overlap:
asking twice then gives the same answer unless the intervals themselves overlap. Computed when read, for every
face.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from server.schemas.advice import AdviceAnswer, Bounds, ExecutorAdvice
from server.services import statistics
from trainer.spec import EXECUTORS
from trainer.spec.advice import Prediction

NATIVE = "native"
GIB = 2**30
EXACTNESS_ORDER = ("E0", "E1", "A")
METHOD = (
    "Student's t on the logarithms of the timed rounds' predictions (samples/s) and of the rounds' speedups over "
    "native's same round, exponentiated. An executor is recommended over native only when the lower end of its "
    "speedup interval is above the upper end of every other executor that fits (native's is 1); otherwise native is."
)


def size_text(value: int) -> str:
    return f"{value / GIB:.1f} GiB" if value >= GIB else f"{value / 2**20:.1f} MiB"


def bounds(values: Sequence[float]) -> Bounds | None:
    """The log-scale 95% interval of the rounds' values; None below two rounds."""
    result = statistics.log_interval(values)
    if result.low is None or result.high is None:
        return None
    return Bounds(low=result.low, high=result.high)


def interval_text(interval: Bounds | None) -> str:
    return "(no interval)" if interval is None else f"[{interval.low:.2f}, {interval.high:.2f}]"


def exactness_text(row: ExecutorAdvice) -> str:
    if row.exactness == "E0":
        return "bitwise exact"
    if row.exactness == "E1":
        bound = f"{row.gradient_rel_l2:.0e}" if row.gradient_rel_l2 is not None else "1e-05"
        return f"exact to {bound}"
    cosine = f" (gradient cosine {row.gradient_cosine:.3f})" if row.gradient_cosine is not None else ""
    return f"approximate{cosine}"


def reason(row: ExecutorAdvice, budget: int | None) -> str:
    """The row's verdict in one sentence: its speedup with its interval, its memory against the budget, its class."""
    if row.samples_per_s is None:
        return f"{row.executor}: no prediction, {row.error}"
    if row.speedup is None:
        speed = "(no native row to compare with)"
    elif row.executor == NATIVE:
        speed = f"{row.speedup:.2f}\N{MULTIPLICATION SIGN}"
    else:
        speed = f"{row.speedup:.2f}\N{MULTIPLICATION SIGN} {interval_text(row.speedup_interval)}"
    memory = size_text(row.peak_memory_bytes or 0)
    if not row.fits_budget and budget is not None:
        return f"{row.executor} {speed} but {memory} > {size_text(budget)} budget"
    return f"{row.executor} {speed}, {memory}, {exactness_text(row)}"


def _exactest(rows: Sequence[ExecutorAdvice]) -> ExecutorAdvice:
    """The most exact class (E0, E1, A), then the registry's order (native first)."""

    def rank(row: ExecutorAdvice) -> tuple[int, int]:
        klass = EXACTNESS_ORDER.index(row.exactness) if row.exactness in EXACTNESS_ORDER else len(EXACTNESS_ORDER)
        return klass, _order(row)

    return min(rows, key=rank)


def _order(row: ExecutorAdvice) -> int:
    return EXECUTORS.index(row.executor) if row.executor in EXECUTORS else len(EXECUTORS)


def _upper(interval: Bounds | None) -> float:
    """An interval's upper end; a row without one might be anything."""
    return math.inf if interval is None else interval.high


def _overlaps(first: Bounds | None, second: Bounds | None) -> bool:
    return first is None or second is None or (first.low <= second.high and second.low <= first.high)


def recommend(rows: Sequence[ExecutorAdvice]) -> tuple[ExecutorAdvice | None, str]:
    """The recommended row and why: the fastest row that fits when its interval clears every other fitting row's
    (the lower end of its above their upper ends); otherwise native, or where native does not fit, the most exact
    of the rows whose intervals overlap the fastest's. Speedups decide; samples/s where native has no prediction."""
    fitting = [r for r in rows if r.fits_budget and r.samples_per_s is not None]
    if not fitting:
        return None, ""
    by_speedup = all(r.speedup is not None for r in fitting)
    what = "speedup interval" if by_speedup else "samples/s interval"
    figure = {
        id(r): (r.speedup, r.speedup_interval) if by_speedup else (r.samples_per_s, r.samples_per_s_interval)
        for r in fitting
    }
    leader = max(fitting, key=lambda r: (figure[id(r)][0] or 0.0, -_order(r)))
    others = [r for r in fitting if r is not leader]
    if not others:
        return leader, f"{leader.executor} is the only executor that fits"
    if leader.executor == NATIVE:
        return leader, "no executor is predicted faster than native"
    mine = figure[id(leader)][1]
    rival = max(others, key=lambda r: _upper(figure[id(r)][1]))
    theirs = figure[id(rival)][1]
    if mine is None or theirs is None:
        why = f"{(rival if mine else leader).executor} has no {what}: an interval needs 2 timed rounds"
    elif mine.low > theirs.high:
        return (
            leader,
            f"{leader.executor}'s {what} {interval_text(mine)} clears {rival.executor}'s {interval_text(theirs)}",
        )
    else:
        why = f"{leader.executor}'s {what} {interval_text(mine)} overlaps {rival.executor}'s {interval_text(theirs)}"
    native = next((r for r in fitting if r.executor == NATIVE), None)
    if native is not None:
        return native, f"{why}, so the exact executor"
    tied = [leader, *(r for r in others if _overlaps(figure[id(r)][1], mine))]
    return _exactest(tied), f"{why}; native does not fit, so the most exact of those tied with {leader.executor}"


def advice_answer(prediction: Prediction, budget: int | None) -> AdviceAnswer:
    """The answer every face shows: the rows with their intervals and verdicts, the recommendation and why."""
    rows = []
    for predicted in prediction.executors:
        row = ExecutorAdvice(
            **predicted.model_dump(),
            samples_per_s_interval=bounds(predicted.round_samples_per_s),
            speedup_interval=bounds(predicted.round_speedups),
            fits_budget=predicted.samples_per_s is not None
            and (budget is None or (predicted.peak_memory_bytes or 0) <= budget),
            reason="",
        )
        row.reason = reason(row, budget)
        rows.append(row)
    chosen, why = recommend(rows)
    if chosen is not None:
        chosen.recommended = True
        summary = f"recommended: {chosen.reason}; {why}"
    else:
        predicted_rows = [r for r in rows if r.peak_memory_bytes is not None]
        smallest = min(predicted_rows, key=lambda r: r.peak_memory_bytes or 0, default=None)
        budget_text = size_text(budget) if budget is not None else "the budget"
        summary = (
            f"no executor fits {budget_text}; the smallest requirement is {smallest.executor} at "
            f"{size_text(smallest.peak_memory_bytes or 0)}"
            if smallest
            else "no executor could be probed"
        )
    counted = [len(r.round_samples_per_s) for r in rows if r.samples_per_s is not None]
    return AdviceAnswer(
        executors=rows,
        recommended=chosen.executor if chosen else None,
        fits=chosen is not None,
        why=why,
        summary=summary,
        budget_bytes=budget,
        trained=prediction.trained,
        samples_per_step=prediction.samples_per_step,
        rounds=min(counted, default=0),
        method=METHOD,
    )
