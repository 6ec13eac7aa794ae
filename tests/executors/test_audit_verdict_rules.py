"""The audit's verdict rules, figure by figure: a class's bound (or the bound a result carries) is inclusive, the E1
and bf16 bound is FLOOR_SAFETY times native's own difference (never under 1e-5), an executor's verdict is the
worst of its updates' and terms', and the worst entry is the most severe, the largest relative L2 among equals."""

from __future__ import annotations

import math
from typing import Any

import pytest

from trainer.audit import CLASS_BOUNDS, FLOOR_SAFETY, floor_bound, floor_split, verdict, worst, worst_entry
from trainer.spec import JaggOptions, LeanReweightOptions

REWEIGHT = LeanReweightOptions()


def figures(rel_l2: float, **more: Any) -> dict[str, Any]:
    return {"bitwise_equal": rel_l2 == 0.0, "rel_l2": rel_l2, "cosine": 1.0 - rel_l2, **more}


def test_the_class_bounds_are_bitwise_for_e0_and_1e_5_for_e1_and_the_floor_safety_factor_is_3() -> None:
    assert CLASS_BOUNDS == {"E0": 0.0, "E1": 1e-5}
    assert FLOOR_SAFETY == 3.0


def test_an_e1_gradient_passes_at_its_bound_and_fails_just_above() -> None:
    assert verdict(REWEIGHT, {**figures(1e-5), "class": "E1"}) == "pass"
    assert verdict(REWEIGHT, {**figures(1.0001e-5), "class": "E1"}) == "fail"


def test_a_bound_the_result_carries_replaces_the_class_s_own() -> None:
    assert verdict(REWEIGHT, {**figures(2e-5), "class": "E1", "bound": 3e-5}) == "pass"
    assert verdict(REWEIGHT, {**figures(2e-5), "class": "E1", "bound": None}) == "fail"  # None: the class's 1e-5


def test_the_bf16_class_passes_within_its_bound_and_fails_beyond_it() -> None:
    assert verdict(REWEIGHT, {**figures(0.006), "class": "bf16", "bound": 0.006}) == "pass"
    assert verdict(REWEIGHT, {**figures(0.0061), "class": "bf16", "bound": 0.006}) == "fail"


def test_an_e0_gradient_passes_only_bitwise_equal() -> None:
    assert verdict(REWEIGHT, {**figures(0.0), "class": "E0"}) == "pass"
    assert verdict(REWEIGHT, {**figures(1e-12), "class": "E0", "bound": 1.0}) == "fail"


def test_the_floor_bound_is_the_safety_factor_times_native_s_own_difference() -> None:
    assert floor_bound(0.002) == pytest.approx(0.006, rel=1e-12)
    assert floor_bound(2e-6) == CLASS_BOUNDS["E1"]  # 6e-6 would hold bf16 closer than fp32 reassociation
    assert floor_bound(CLASS_BOUNDS["E1"] / FLOOR_SAFETY) == pytest.approx(CLASS_BOUNDS["E1"])


def test_a_nan_floor_makes_a_nan_bound_and_a_failed_verdict() -> None:
    bound = floor_bound(float("nan"))
    assert math.isnan(bound)
    assert verdict(REWEIGHT, {**figures(0.001), "class": "bf16", "bound": bound}) == "fail"


def test_native_s_floor_splits_a_rank_s_rows_one_a_micro_batch_unless_the_spec_already_does() -> None:
    assert floor_split(4, 1) == 4
    assert floor_split(4, 3) == 4
    assert floor_split(4, 4) == 1
    assert floor_split(4, 8) == 1


@pytest.mark.parametrize(
    ("verdicts", "want"),
    [
        (["pass", "pass"], "pass"),
        (["pass", "report"], "report"),
        (["report", "warn", "pass"], "warn"),
        (["warn", "fail", "report"], "fail"),
        (["fail", "pass"], "fail"),
    ],
)
def test_an_executor_s_verdict_is_the_most_severe_of_its_updates_and_terms(verdicts: list[str], want: str) -> None:
    assert worst(verdicts) == want


def test_the_worst_entry_is_the_most_severe_and_among_equals_the_farthest() -> None:
    updates = [
        {
            "update": 1,
            "terms": {"total": {"rel_l2": 9e-6, "verdict": "pass"}, "kl": {"rel_l2": 1e-2, "verdict": "fail"}},
        },
        {
            "update": 2,
            "terms": {"total": {"rel_l2": 5e-2, "verdict": "fail"}, "kl": {"rel_l2": 1e-3, "verdict": "pass"}},
        },
    ]
    assert worst_entry(updates) == {"update": 2, "term": "total", "rel_l2": 5e-2, "verdict": "fail"}
    assert worst_entry(updates[:1]) == {"update": 1, "term": "kl", "rel_l2": 1e-2, "verdict": "fail"}
    assert worst_entry([]) is None


def test_a_class_a_term_below_the_cosine_warn_warns_and_otherwise_reports() -> None:
    options = JaggOptions(cosine_warn=0.9)
    assert verdict(options, {**figures(0.5, cosine=0.89), "class": "A", "bound": None}) == "warn"
    assert verdict(options, {**figures(0.5, cosine=0.9), "class": "A", "bound": None}) == "report"
