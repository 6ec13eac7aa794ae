"""Mean pixel intensity: the cheapest reward, for smoke tests and the tiny example."""

from __future__ import annotations

import torch


def brightness(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    return images.float().mean(dim=(1, 2, 3))
