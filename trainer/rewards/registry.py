"""Name → reward function, the weighted sum over a spec's reward list, and third-party plugins.

A reward is ``fn(images, prompts) -> scores``: images NCHW float in [0, 1], one float score
per image. A factory ``make(path, device) -> fn`` builds it (model-based rewards load their
weights from ``path``). Plugins register a factory under the ``sfumato.rewards`` entry point group.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import entry_points

import torch

from trainer.rewards.brightness import brightness
from trainer.rewards.colorfulness import colorfulness
from trainer.rewards.jpeg_compressibility import jpeg_compressibility
from trainer.rewards.jpeg_incompressibility import jpeg_incompressibility
from trainer.rewards.prompt_color_match import prompt_color_match
from trainer.spec import MODEL_REWARDS, REWARD_ENTRY_POINT_GROUP, RewardSpec

RewardFn = Callable[[torch.Tensor, list[str]], torch.Tensor]
RewardFactory = Callable[[str | None, torch.device], RewardFn]

PIXEL_REWARD_FUNCTIONS: dict[str, RewardFn] = {
    "brightness": brightness,
    "colorfulness": colorfulness,
    "jpeg_compressibility": jpeg_compressibility,
    "jpeg_incompressibility": jpeg_incompressibility,
    "prompt_color_match": prompt_color_match,
}


def make_reward(name: str, path: str | None, device: torch.device) -> RewardFn:
    if name in PIXEL_REWARD_FUNCTIONS:
        return PIXEL_REWARD_FUNCTIONS[name]
    if name in MODEL_REWARDS:
        raise ValueError(f"reward.name: model-based reward {name!r} is not available in this trainer yet")
    for point in entry_points(group=REWARD_ENTRY_POINT_GROUP):
        if point.name == name:
            factory: RewardFactory = point.load()
            return factory(path, device)
    raise ValueError(f"reward.name: unknown reward {name!r}")


class WeightedReward:
    """Σ_k w_k r_k for advantages, with every raw r_k kept for logging as ``reward/<name>``."""

    def __init__(self, specs: list[RewardSpec], device: torch.device) -> None:
        self.parts = [(spec.name, spec.weight, make_reward(spec.name, spec.path, device)) for spec in specs]

    @torch.no_grad()
    def __call__(self, images: torch.Tensor, prompts: list[str]) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        raw = {name: fn(images, prompts).float().reshape(-1).cpu() for name, _, fn in self.parts}
        total = sum(weight * raw[name] for name, weight, _ in self.parts)
        return total, raw  # type: ignore[return-value]
