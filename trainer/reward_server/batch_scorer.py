"""One merged batch through the reward: 8-bit images in, plain scores and sub-scores out.

The reward is any built-in or plugin reward function (trainer/rewards/registry.py). A plugin whose function
takes a ``metadata`` keyword gets each image's metadata object from the request.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from trainer.rewards.registry import RewardFn


@dataclass
class BatchScores:
    scores: list[float]
    sub_scores: dict[str, list[float]]


class BatchScorer:
    def __init__(self, reward: RewardFn, device: torch.device) -> None:
        self.reward = reward
        self.device = device
        self.takes_metadata = "metadata" in inspect.signature(reward).parameters

    @torch.no_grad()
    def __call__(self, pixels: np.ndarray, prompts: list[str], metadata: list[dict[str, Any]]) -> BatchScores:
        """``pixels`` [N, H, W, 3] uint8; the reward sees [N, 3, H, W] floats in [0, 1] as in training."""
        images = torch.from_numpy(pixels).to(self.device).permute(0, 3, 1, 2).float() / 255
        extra = {"metadata": metadata} if self.takes_metadata else {}
        output = self.reward(images, prompts, **extra)
        scores, subs = output if isinstance(output, tuple) else (output, {})
        answer = BatchScores(
            scores=scores.float().reshape(-1).cpu().tolist(),
            sub_scores={name: values.float().reshape(-1).cpu().tolist() for name, values in subs.items()},
        )
        for field, values in {"scores": answer.scores, **answer.sub_scores}.items():
            if len(values) != len(prompts):
                raise ValueError(f"{field}: {len(values)} values for {len(prompts)} images")
        return answer
