"""The one definition of an evaluation's figures, from the scores its trainer reported: per reward, the mean and the
population standard deviation over every sample (prompt x seed), the sample count n, and each prompt's mean over
its seeds. Every face (API, pages, CLI) shows these stored figures; none computes its own."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class RewardFigures:
    mean: float
    std: float
    n: int
    per_prompt: list[float]


def reward_figures(scores: list[float], seeds_per_prompt: int) -> RewardFigures:
    """`scores` prompt by prompt, each prompt's `seeds_per_prompt` seeds in a row."""
    n = len(scores)
    mean = math.fsum(scores) / n
    std = math.sqrt(math.fsum((score - mean) ** 2 for score in scores) / n)
    per_prompt = [
        math.fsum(scores[start : start + seeds_per_prompt]) / seeds_per_prompt
        for start in range(0, n, seeds_per_prompt)
    ]
    return RewardFigures(mean=mean, std=std, n=n, per_prompt=per_prompt)
