"""The gradient cosine the audit and JAGG's probes report: the cosine of two flattened gradients, clamped to
[-1, 1] where fp32 rounding of the quotient passes ±1, and NaN (never a clamped 1.0) for a NaN or infinite
gradient."""

from __future__ import annotations

import math

import torch

from trainer.executors.gradient_cosine import gradient_cosine

# A float32 vector whose cosine with itself rounds to 1.0000001 before the clamp.
ROUNDS_PAST_ONE = torch.tensor([1.5409960, -0.2934289, -2.1787894, 0.5684313, -1.0845224, -1.3985955, 0.4033468])


def test_the_cosine_of_two_gradients_is_their_normalised_dot_product() -> None:
    a, b = torch.tensor([1.0, 2.0, 2.0]), torch.tensor([2.0, 0.0, 1.0])
    assert math.isclose(gradient_cosine(a, b), 4.0 / (3.0 * math.sqrt(5.0)), rel_tol=1e-6)
    assert gradient_cosine(torch.tensor([1.0, 0.0]), torch.tensor([0.0, 3.0])) == 0.0


def test_a_quotient_rounded_past_one_is_clamped_to_exactly_plus_or_minus_one() -> None:
    raw = float(torch.nn.functional.cosine_similarity(ROUNDS_PAST_ONE, ROUNDS_PAST_ONE, dim=0))
    assert raw > 1.0  # the premise: fp32 rounding passes 1
    assert gradient_cosine(ROUNDS_PAST_ONE, ROUNDS_PAST_ONE) == 1.0
    assert gradient_cosine(ROUNDS_PAST_ONE, -ROUNDS_PAST_ONE) == -1.0


def test_a_nan_or_infinite_gradient_gives_a_nan_cosine() -> None:
    assert math.isnan(gradient_cosine(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0])))
    assert math.isnan(gradient_cosine(torch.tensor([1.0, 2.0]), torch.tensor([float("inf"), 2.0])))
