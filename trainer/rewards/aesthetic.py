"""The LAION aesthetic predictor: an MLP on the L2-normalised CLIP image embedding (raw score).

The directory holds a CLIP ViT-L/14 ``CLIPModel`` (with its tokenizer and image processor) and
the MLP head, either as LAION's ``sac+logos+ava1-l14-linearMSE.pth`` or as
``aesthetic_mlp.safetensors`` with the same keys. The prompt plays no part.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import torch
from torch import nn

from trainer.rewards.clip_embedding import ClipEmbedder

HEAD_FILES = ("aesthetic_mlp.safetensors", "sac+logos+ava1-l14-linearMSE.pth")


def aesthetic_head(embedding_dim: int) -> nn.Sequential:
    """LAION's layer layout (the dropouts keep the state-dict keys layers.0 … layers.7)."""
    return nn.Sequential(
        nn.Linear(embedding_dim, 1024),
        nn.Dropout(0.2),
        nn.Linear(1024, 128),
        nn.Dropout(0.2),
        nn.Linear(128, 64),
        nn.Dropout(0.1),
        nn.Linear(64, 16),
        nn.Linear(16, 1),
    )


def load_head(directory: Path, embedding_dim: int, device: torch.device) -> nn.Module:
    for name in HEAD_FILES:
        file = directory / name
        if file.exists():
            if file.suffix == ".safetensors":
                from safetensors.torch import load_file

                state = load_file(str(file))
            else:
                state = torch.load(file, map_location="cpu", weights_only=True)
            head = aesthetic_head(embedding_dim)
            head.load_state_dict({key.removeprefix("layers."): value for key, value in state.items()})
            return head.to(device).eval().requires_grad_(False)
    raise FileNotFoundError(f"no aesthetic head in {directory}: expected one of {', '.join(HEAD_FILES)}")


def make_aesthetic(path: str, device: torch.device) -> Callable[[torch.Tensor, list[str]], torch.Tensor]:
    embedder = ClipEmbedder(path, device)
    head = load_head(Path(path), embedder.model.config.projection_dim, device)

    @torch.no_grad()
    def aesthetic(images: torch.Tensor, prompts: list[str]) -> torch.Tensor:
        return head(embedder.image_embeds(images)).squeeze(1)

    return aesthetic
