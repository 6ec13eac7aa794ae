"""PickScore as Flow-GRPO computes it: logit_scale · cos(image, prompt) / 26, "norm to 0-1".

The directory holds the PickScore_v1 CLIPModel together with the CLIP-H tokenizer and image
processor it was trained with (save both into one folder).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from trainer.rewards.clip_embedding import ClipEmbedder

SCALE = 26.0


def make_pickscore(path: str, device: torch.device) -> Callable[[torch.Tensor, list[str]], torch.Tensor]:
    embedder = ClipEmbedder(path, device)

    def pickscore(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        return embedder.logit_scale * embedder.cosine(images, prompts) / SCALE

    return pickscore
