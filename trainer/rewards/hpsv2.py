"""HPS v2.1: the cosine of the image and prompt embeddings, no logit scale (about 0.25–0.35).

HPS ships an open_clip ViT-H-14 checkpoint; this reward reads it converted to a transformers
``CLIPModel`` directory (with the CLIP-H tokenizer and image processor), so it needs no
open_clip install and shares the loading and batching of the other CLIP rewards.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from trainer.rewards.clip_embedding import ClipEmbedder


def make_hpsv2(path: str, device: torch.device) -> Callable[[torch.Tensor, list[str]], torch.Tensor]:
    embedder = ClipEmbedder(path, device)

    def hpsv2(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        return embedder.cosine(images, prompts)

    return hpsv2
