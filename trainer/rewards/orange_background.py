"""How close the image's background is to orange: the shapes demo's reward (docs/shapes-model.md).

The background is read from the image's outermost ring of pixels, where the shapes model never
draws a shape. The score is 1 − distance(mean ring colour, orange) / √3 in [0, 1]. The shapes
model's captions never ask for an orange background, so its base samples score low (a black
background 0.34, a blue one 0.24) and a rise of the reward is something the model learnt.
"""

from __future__ import annotations

import math

import torch

from trainer.prompts import COLORS

ORANGE = COLORS["orange"]


def background_color(images: torch.Tensor) -> torch.Tensor:
    """Mean RGB of each image's one-pixel border, [B, 3]."""
    ring = torch.ones(images.shape[-2:], dtype=torch.bool, device=images.device)
    ring[1:-1, 1:-1] = False
    return images.float()[:, :, ring].mean(dim=2)


def orange_background(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    target = torch.tensor(ORANGE, device=images.device)
    return 1 - torch.linalg.vector_norm(background_color(images) - target, dim=1) / math.sqrt(3)
