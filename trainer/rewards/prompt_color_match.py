"""How close the image's dominant colour is to the colour the prompt names.

The dominant colour is the saturation-weighted mean RGB (grey pixels count little, so a red
object on a grey background still reads as red). The score is 1 − distance / √3 in [0, 1];
a prompt naming no known colour scores 0 for every image, so it gives no advantage signal.
"""

from __future__ import annotations

import math

import torch

from trainer.prompts import COLORS, named_color


def dominant_color(images: torch.Tensor) -> torch.Tensor:
    pixels = images.float().flatten(2)  # [B, 3, P]
    saturation = pixels.max(dim=1).values - pixels.min(dim=1).values
    weights = saturation + 0.05
    return (pixels * weights.unsqueeze(1)).sum(dim=2) / weights.sum(dim=1, keepdim=True)


def prompt_color_match(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    colors = dominant_color(images)
    scores = torch.zeros(len(prompts), device=images.device)
    for row, prompt in enumerate(prompts):
        name = named_color(prompt)
        if name is None:
            continue
        target = torch.tensor(COLORS[name], device=images.device)
        scores[row] = 1 - torch.linalg.vector_norm(colors[row] - target) / math.sqrt(3)
    return scores
