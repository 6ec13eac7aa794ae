"""The advice's answer (services/advice_verdict.py): each row's intervals over the probe's rounds, and the rule
that recommends a faster executor only when its speedup interval clears every other fitting row's (native's is
exactly 1), and otherwise the exact executor with the intervals that overlap named."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from server.services.advice_verdict import advice_answer
from server.services.statistics import log_interval
from tests.spec.advice_fixture import GIB, REPORT, SPEC
from trainer.spec.advice import ExecutorPrediction, Prediction, predict

TIMES = "\N{MULTIPLICATION SIGN}"
CLASSES = {"native": "E0", "lean_retain": "E0", "lean_reweight": "E1", "jagg": "A"}
NATIVE_SPEED = 10.0


def prediction(peaks: dict[str, int] | None = None, **speedups: Sequence[float]) -> Prediction:
    """Native at 10 samples/s in every round, and each named executor at the given speedup in each round."""
    rounds = len(next(iter(speedups.values())))
    rows = [("native", [1.0] * rounds), *speedups.items()]
    return Prediction(
        executors=[
            ExecutorPrediction(
                executor=name,
                exactness=CLASSES[name],  # type: ignore[arg-type]
                samples_per_s=NATIVE_SPEED * math.prod(ratios) ** (1 / rounds),
                speedup=math.prod(ratios) ** (1 / rounds),
                peak_memory_bytes=(peaks or {}).get(name, GIB),
                round_samples_per_s=[NATIVE_SPEED * r for r in ratios],
                round_speedups=list(ratios),
            )
            for name, ratios in rows
        ],
        trained=5,
        samples_per_step=8,
    )


def test_the_intervals_are_the_log_scale_t_intervals_of_the_rounds() -> None:
    answer = advice_answer(predict(SPEC, REPORT), None)
    retain = next(row for row in answer.executors if row.executor == "lean_retain")
    assert retain.speedup_interval is not None and retain.samples_per_s_interval is not None
    expected = log_interval(retain.round_speedups)
    assert (retain.speedup_interval.low, retain.speedup_interval.high) == (expected.low, expected.high)
    # by hand: rounds 2.61x times 0.95/1.05, 1, 1.05/0.95; t(0.975, 2) = 4.3027; the logs' s = ln(1.05/0.95)
    half = 4.302652729911275 * math.log(1.05 / 0.95) / math.sqrt(3)
    speedup = 129 / 49.5
    assert (retain.speedup_interval.low, retain.speedup_interval.high) == pytest.approx(
        (speedup * math.exp(-half), speedup * math.exp(half))
    )
    native = next(row for row in answer.executors if row.executor == "native")
    assert (native.speedup_interval.low, native.speedup_interval.high) == (1.0, 1.0)  # type: ignore[union-attr]
    assert answer.rounds == 3


def test_an_executor_whose_interval_clears_natives_is_recommended() -> None:
    answer = advice_answer(prediction(jagg=[1.5, 1.6, 1.55]), None)
    assert answer.recommended == "jagg"
    assert answer.why.startswith("jagg's speedup interval [1.") and answer.why.endswith("clears native's [1.00, 1.00]")


def test_an_executor_whose_interval_overlaps_natives_leaves_native_recommended_and_says_why() -> None:
    answer = advice_answer(prediction(jagg=[0.9, 1.4, 1.3]), None)
    jagg = next(row for row in answer.executors if row.executor == "jagg")
    assert jagg.speedup is not None and jagg.speedup > 1  # faster by its point figure alone
    assert answer.recommended == "native"
    assert jagg.speedup_interval is not None and jagg.speedup_interval.low < 1
    interval = f"[{jagg.speedup_interval.low:.2f}, {jagg.speedup_interval.high:.2f}]"
    assert answer.why == f"jagg's speedup interval {interval} overlaps native's [1.00, 1.00], so the exact executor"
    assert answer.summary.startswith(f"recommended: native 1.00{TIMES}, 1.0 GiB, bitwise exact; jagg's")


def test_the_fastest_must_clear_the_runner_up_as_well_as_native() -> None:
    answer = advice_answer(prediction(lean_retain=[1.5, 1.6, 1.55], lean_reweight=[1.45, 1.6, 1.5]), None)
    assert answer.recommended == "native"
    assert answer.why.startswith("lean_retain's speedup interval") and "overlaps lean_reweight's" in answer.why


def test_the_runner_up_is_the_other_row_with_the_highest_upper_end() -> None:
    """jagg is slower than lean_reweight by its figure but less certain: its upper end is the one to clear."""
    answer = advice_answer(
        prediction(lean_retain=[2.0, 2.1, 2.05], lean_reweight=[1.5, 1.52, 1.51], jagg=[0.8, 2.6, 1.2]), None
    )
    assert answer.recommended == "native" and "overlaps jagg's" in answer.why


def test_a_single_round_gives_no_interval_and_no_faster_recommendation() -> None:
    answer = advice_answer(prediction(jagg=[1.8]), None)
    assert answer.recommended == "native"
    assert answer.why.startswith("jagg has no speedup interval: an interval needs 2 timed rounds")


def test_where_native_does_not_fit_the_most_exact_of_those_tied_with_the_fastest_is_recommended() -> None:
    peaks = {"native": 8 * GIB}
    answer = advice_answer(prediction(peaks, jagg=[1.5, 1.6, 1.55], lean_retain=[1.45, 1.6, 1.5]), 4 * GIB)
    assert answer.recommended == "lean_retain"
    assert answer.why.endswith("native does not fit, so the most exact of those tied with jagg")


def test_a_budget_below_retains_peak_says_so_on_its_row() -> None:
    answer = advice_answer(predict(SPEC, REPORT), 16 * GIB)
    rows = {row.executor: row for row in answer.executors}
    assert not rows["lean_retain"].fits_budget
    assert rows["lean_retain"].reason == f"lean_retain 2.61{TIMES} [2.03, 3.34] but 20.0 GiB > 16.0 GiB budget"
    assert answer.recommended == "native" and rows["native"].recommended
    assert answer.why == "native is the only executor that fits"


def test_no_fit_names_the_smallest_requirement() -> None:
    answer = advice_answer(predict(SPEC, REPORT), GIB)
    assert (answer.fits, answer.recommended) == (False, None)
    assert answer.summary == "no executor fits 1.0 GiB; the smallest requirement is native at 12.0 GiB"


def test_a_failed_probe_is_its_rows_reason_and_the_others_still_answer() -> None:
    jagg = next(row for row in advice_answer(predict(SPEC, REPORT), None).executors if row.executor == "jagg")
    assert (jagg.samples_per_s, jagg.fits_budget, jagg.recommended) == (None, False, False)
    assert jagg.reason == "jagg: no prediction, probe failed at K=4, 1 prompt(s): out of memory"
