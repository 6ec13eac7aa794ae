"""Hasler–Süsstrunk colourfulness, on [0, 1] RGB: spread plus magnitude of opponent channels."""

from __future__ import annotations

import torch


def colorfulness(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    red, green, blue = images.float().unbind(dim=1)
    rg = (red - green).flatten(1)
    yb = (0.5 * (red + green) - blue).flatten(1)
    spread = torch.sqrt(rg.var(dim=1, unbiased=False) + yb.var(dim=1, unbiased=False))
    magnitude = torch.sqrt(rg.mean(dim=1) ** 2 + yb.mean(dim=1) ** 2)
    return spread + 0.3 * magnitude
