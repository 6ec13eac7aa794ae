"""A NaN in any audit figure is a failed verdict, never a pass or a report: ``max(-1, min(1, nan))`` is 1.0, and
a NaN compares false with every bound."""

from __future__ import annotations

import math
from typing import Any

import pytest
import torch

from trainer.audit import Capture, compare, verdict
from trainer.executors.gradient_cosine import gradient_cosine
from trainer.spec import JaggOptions, LeanRetainOptions, LeanReweightOptions
from trainer.spec.executor import ExecutorOptions

NAMES = ["a", "b"]


def capture(gradient: list[float]) -> Capture:
    flat = torch.tensor(gradient)
    return Capture(flat, [flat[:2], flat[2:]], flat * 1e-3, {}, {"loss": 0.1, "clip_frac": 0.0, "kl": 0.0}, "A")


def test_the_cosine_of_a_nan_gradient_is_nan_not_a_clamped_one() -> None:
    assert math.isnan(gradient_cosine(torch.tensor([1.0, float("nan")]), torch.tensor([1.0, 2.0])))
    assert gradient_cosine(torch.tensor([1.0, 2.0]), torch.tensor([-2.0, -4.0])) == pytest.approx(-1.0)


@pytest.mark.parametrize(
    ("options", "exactness"),
    [
        (LeanRetainOptions(), "E0"),
        (LeanReweightOptions(), "E1"),
        (JaggOptions(), "A"),
        (JaggOptions(cosine_warn=0.9), "A"),
    ],
    ids=["E0", "E1", "A", "A-with-cosine-warn"],
)
def test_a_nan_gradient_fails_the_verdict_of_every_class(options: ExecutorOptions, exactness: str) -> None:
    result = compare(capture([1.0, float("nan"), 3.0, 4.0]), capture([1.0, 2.0, 3.0, 4.0]), NAMES)
    assert math.isnan(result["cosine"])
    assert verdict(options, {**result, "class": exactness, "group_cosines": []}) == "fail"


@pytest.mark.parametrize(
    "figure",
    [{"group_cosines": [0.99, float("nan")]}, {"metrics": {"loss": float("nan")}}, {"grad_norm": float("inf")}],
    ids=["jagg-group-cosine", "loss", "infinite-grad-norm"],
)
def test_a_nan_or_infinite_figure_anywhere_in_the_result_fails_a_class_a_executor(figure: dict[str, Any]) -> None:
    result = compare(capture([1.0, 2.0, 3.0, 4.0]), capture([1.0, 2.0, 3.0, 4.5]), NAMES)
    assert verdict(JaggOptions(), {**result, "class": "A", "group_cosines": [0.99]}) == "report"
    assert verdict(JaggOptions(), {**result, "class": "A", "group_cosines": [0.99], **figure}) == "fail"
