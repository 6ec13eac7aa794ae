"""The range a built-in reward's score cannot leave, declared beside the spec so the torch-free server can keep
a summary's reward intervals inside what is possible. Only the rewards whose definition bounds the score are
listed; a spec with any other reward has no declared range."""

from __future__ import annotations

from collections.abc import Iterable

# brightness: the mean of pixels in [0, 1]; orange_background and prompt_color_match: 1 - distance / sqrt(3).
REWARD_RANGES: dict[str, tuple[float, float]] = {
    "brightness": (0.0, 1.0),
    "orange_background": (0.0, 1.0),
    "prompt_color_match": (0.0, 1.0),
    "ocr": (0.0, 1.0),  # 1 - a distance capped at the target's length, over that length
    "geneval": (0.0, 1.0),  # the share of the checks that pass
}


def weighted_reward_range(rewards: Iterable[tuple[str, float]]) -> tuple[float, float] | None:
    """The range of the weighted sum of (name, weight) rewards (what `reward/mean` averages); None when a
    reward declares none, or there is no reward."""
    lowest = highest = 0.0
    named = list(rewards)
    if not named:
        return None
    for name, weight in named:
        declared = REWARD_RANGES.get(name)
        if declared is None:
            return None
        ends = (weight * declared[0], weight * declared[1])
        lowest, highest = lowest + min(ends), highest + max(ends)
    return lowest, highest
