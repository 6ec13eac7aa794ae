"""CLIPScore as Flow-GRPO computes it: logit_scale · cos(image, prompt) / 30 (about 0–1)."""

from __future__ import annotations

from collections.abc import Callable

import torch

from trainer.rewards.clip_embedding import ClipEmbedder

SCALE = 30.0


def make_clip_score(path: str, device: torch.device) -> Callable[[torch.Tensor, list[str]], torch.Tensor]:
    embedder = ClipEmbedder(path, device)

    def clip_score(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        return embedder.logit_scale * embedder.cosine(images, prompts) / SCALE

    return clip_score
