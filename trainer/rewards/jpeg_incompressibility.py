"""DDPO's incompressibility: larger JPEG files score higher (+kB / 500)."""

from __future__ import annotations

import torch

from trainer.rewards.jpeg_size import jpeg_kilobytes


def jpeg_incompressibility(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    return jpeg_kilobytes(images).to(images.device) / 500
