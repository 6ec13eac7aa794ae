"""The advice's arithmetic (trainer/spec/advice.py), the prediction per executor and per timed round, against a
hand-computed fixture (the recommendation from it: tests/server/test_advice_verdict.py).

Spec: T = 6, K = 5, 2 prompts x group 4 = 8 rows on one rank, full fine-tuning, no KL, one inner epoch.
Unit costs (F, F_g, B) at 1, 4 and 8 rows: (1, 1, 2), (2, 2, 4), (3, 3, 6) s; reward 0.125 s per sample,
optimizer 0.5 s, so the fixed time at n rows is n/8 + 0.5.

- native, T·F(n) + K·(F_g + B)(n) + fixed: at (K=5, n=8) 18 + 45 + 1.5 = 64.5 s; its probe steps took twice
  the model at every point (calibration 2), so 129 s and 8/129 samples/s.
- lean_retain, (T-K)·F(n) + K·(F_g + B)(n) + fixed: 3 + 45 + 1.5 = 49.5 s at calibration 1: speedup 129/49.5.
- rounds: native's steps took 0.95, 1 and 1/0.95 of that in its three rounds, lean_retain's 1.05, 1 and 1/1.05.
- memory: resident 10 GiB; native's step peak is 1 GiB per 4 rows whatever K (12 GiB at full size),
  lean_retain's K x rows / 4 GiB (at K=5, n=8: 10 GiB above resident, 20 GiB in all).
"""

from __future__ import annotations

import pytest

from tests.spec.advice_fixture import GIB, NATIVE_ROUNDS, REPORT, RETAIN_ROUNDS, SPEC, native_model, points
from trainer.spec.advice import ExecutorPrediction, calibration, interpolated_costs, predict
from trainer.spec.cost_model import UnitCosts
from trainer.spec.probe_report import ExecutorProbe
from trainer.spec.probe_sizes import resized


def rows() -> dict[str, ExecutorPrediction]:
    return {row.executor: row for row in predict(SPEC, REPORT).executors}


def test_native_step_time_is_the_cost_model_at_full_size_times_its_calibration() -> None:
    native = rows()["native"]
    assert native.calibration == pytest.approx(2.0)
    assert native.step_seconds == pytest.approx(129.0)
    assert native.samples_per_s == pytest.approx(8 / 129)


def test_speedup_is_over_natives_predicted_samples_per_s() -> None:
    assert rows()["lean_retain"].speedup == pytest.approx(129 / 49.5)


def test_peak_memory_is_resident_plus_the_bilinear_step_peak_extrapolated_to_full_k_and_rows() -> None:
    table = rows()
    assert table["native"].peak_memory_bytes == 12 * GIB
    assert table["lean_retain"].peak_memory_bytes == 20 * GIB
    assert table["lean_retain"].memory_by_trained[0] == 12 * GIB  # K = 1: 10 + 1 * 8 / 4


def test_each_rounds_prediction_is_that_rounds_step_times_scaled_by_the_cost_model() -> None:
    table = rows()
    assert table["native"].round_samples_per_s == pytest.approx([8 / (129 * f) for f in NATIVE_ROUNDS])
    assert table["lean_retain"].round_samples_per_s == pytest.approx([8 / (49.5 * f) for f in RETAIN_ROUNDS])


def test_each_rounds_speedup_pairs_the_executor_with_natives_same_round() -> None:
    expected = [129 * native / (49.5 * retain) for native, retain in zip(NATIVE_ROUNDS, RETAIN_ROUNDS, strict=True)]
    assert rows()["lean_retain"].round_speedups == pytest.approx(expected)


def test_a_failed_probe_is_its_rows_error_and_the_others_still_predict() -> None:
    jagg = rows()["jagg"]
    assert (jagg.samples_per_s, jagg.error) == (None, "probe failed at K=4, 1 prompt(s): out of memory")


def test_unit_costs_between_and_beyond_the_measured_rows_are_linear_in_the_nearest_two() -> None:
    costs = interpolated_costs(REPORT.unit_costs)
    assert costs(6) == UnitCosts(2.5, 2.5, 5.0)  # halfway between 4 and 8 rows
    assert costs(12) == UnitCosts(4.0, 4.0, 8.0)  # on past 8 along 4 → 8


RATIOS = {(2, 4): 1.0, (2, 8): 2.0, (4, 4): 3.0, (4, 8): 4.0}  # measured / model at each probe point
UNEVEN = REPORT.model_copy(
    update={
        "executors": [
            ExecutorProbe(
                name="native",
                exactness="E0",
                points=points(lambda k, n: RATIOS[(k, n)] * native_model(k, n), lambda k, n: n / 4 * GIB),
            )
        ]
    }
)


def test_a_probe_points_prediction_is_its_measurement() -> None:
    at_point = resized(SPEC, 4, 1)  # K = 4, one prompt of 4 rows
    native = predict(at_point, UNEVEN).executors[0]
    assert native.step_seconds == pytest.approx(3.0 * native_model(4, 4))


def test_calibration_is_bilinear_between_probe_points_and_held_beyond_them() -> None:
    probe = UNEVEN.executors[0]
    assert calibration(SPEC, probe, UNEVEN, 3, 6) == pytest.approx(2.5)  # the four corners' mean
    assert calibration(SPEC, probe, UNEVEN, 5, 16) == pytest.approx(4.0)  # beyond K₂ and n₂: (4, 8)'s ratio
