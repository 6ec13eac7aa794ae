"""DDPO's compressibility: smaller JPEG files score higher (−kB / 500, Flow-GRPO's scale)."""

from __future__ import annotations

import torch

from trainer.rewards.jpeg_size import jpeg_kilobytes


def jpeg_compressibility(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
    return -jpeg_kilobytes(images).to(images.device) / 500
