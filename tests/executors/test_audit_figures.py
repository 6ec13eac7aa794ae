"""The audit's figures of one gradient against native's (``gradient_figures``) and of the step's weight update
(``compare``), on hand-made tensors whose relative L2, cosine and largest difference are known: a report whose
figures are misread passes every verdict the figures feed."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.audit import WORST_TENSORS, Capture, compare, gradient_figures

GOT, NATIVE = torch.tensor([1.0, 2.0, 2.0]), torch.tensor([1.0, 2.0, 4.0])  # differ by 2 in one entry
REL_L2, COSINE = 2.0 / math.sqrt(21.0), 13.0 / (3.0 * math.sqrt(21.0))


def figures(got: torch.Tensor, native: torch.Tensor) -> dict[str, object]:
    return gradient_figures(got, native, [got], [native], ["w"])


def capture(gradient: torch.Tensor, update: torch.Tensor) -> Capture:
    return Capture(gradient, [gradient], update, extra={}, metrics={}, exactness="E0")


def test_a_gradient_is_measured_against_native_s_by_relative_l2_cosine_largest_difference_and_norms() -> None:
    got = figures(GOT, NATIVE)
    assert got["bitwise_equal"] is False
    assert got["rel_l2"] == pytest.approx(REL_L2, rel=1e-12)
    assert got["cosine"] == pytest.approx(COSINE, rel=1e-6)
    assert (got["max_abs_diff"], got["grad_norm"]) == (2.0, 3.0)
    assert got["native_grad_norm"] == pytest.approx(math.sqrt(21.0), rel=1e-12)


def test_only_a_gradient_equal_to_native_s_is_bitwise_equal_and_at_relative_l2_0() -> None:
    same = figures(NATIVE.clone(), NATIVE)
    assert (same["bitwise_equal"], same["rel_l2"], same["max_abs_diff"]) == (True, 0.0, 0.0)


def test_against_a_native_gradient_of_norm_0_the_relative_l2_is_the_difference_s_own_norm() -> None:
    assert figures(torch.tensor([3.0, 4.0]), torch.zeros(2))["rel_l2"] == 5.0


def test_the_worst_tensors_are_the_five_farthest_from_native_s_relative_to_native_s_tensor() -> None:
    """Each tensor off by its own factor; one whose native tensor is all zeros is measured by its own norm (1.0)."""
    off = {"a": 0.0, "b": 0.3, "c": 0.1, "d": 0.5, "e": 0.2, "f": 0.4, "g": 0.05}
    native = [torch.full((2,), float(i + 1)) for i in range(len(off))]
    got = [t * (1.0 + e) for t, e in zip(native, off.values(), strict=True)]
    native, got = [*native, torch.zeros(2)], [*got, torch.tensor([0.6, 0.8])]
    worst = gradient_figures(torch.cat(got), torch.cat(native), got, native, [*off, "zero"])["worst_tensors"]
    assert [w["name"] for w in worst] == ["zero", "d", "f", "b", "e"][:WORST_TENSORS]
    assert [w["rel_l2"] for w in worst] == pytest.approx([1.0, 0.5, 0.4, 0.3, 0.2], rel=1e-6)


def test_the_step_s_weight_update_is_measured_against_native_s_by_relative_l2_and_cosine() -> None:
    step = compare(capture(NATIVE, GOT), capture(NATIVE, NATIVE), ["w"])
    assert step["update_rel_l2"] == pytest.approx(REL_L2, rel=1e-12)
    assert step["update_cosine"] == pytest.approx(COSINE, rel=1e-6)


def test_against_a_native_step_that_moved_nothing_the_update_s_relative_l2_is_0_not_a_division_by_0() -> None:
    assert compare(capture(NATIVE, GOT), capture(NATIVE, torch.zeros(3)), ["w"])["update_rel_l2"] == 0.0
