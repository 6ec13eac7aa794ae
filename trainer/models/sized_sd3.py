"""An SD3-shaped model of a chosen size with random weights: what benchmarks time at a real model's scale.

The built-in tiny model is so small that a batch of four costs barely more than one sample, which
no GPU model does. This one keeps the tiny SD3 model's text encoders, tokenizers, colour VAE and
SD3.5's scheduler config, and replaces its transformer by an ``SD3Transformer2DModel`` of the given
width, depth and latent size (heads of 64, SD3's). It is written with ``save_pretrained`` and jobs
load it through ``from_pretrained`` as any checkpoint; ``model.path`` names the folder.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch

from trainer.models.builtin_tiny import BUILD_SEED, TEXT_HIDDEN, TEXT_PROJECTION, TRANSFORMER_CONFIG, vocabulary

HEAD_DIM = 64


@dataclass(frozen=True)
class SD3Size:
    hidden: int  # a multiple of HEAD_DIM
    blocks: int
    latent_size: int  # image tokens = (latent_size / 2)², SD3's 2 × 2 patches

    @property
    def image_tokens(self) -> int:
        return (self.latent_size // 2) ** 2

    def transformer_config(self) -> dict:
        return {
            **TRANSFORMER_CONFIG,
            "sample_size": self.latent_size,
            "pos_embed_max_size": self.latent_size,
            "num_layers": self.blocks,
            "attention_head_dim": HEAD_DIM,
            "num_attention_heads": self.hidden // HEAD_DIM,
            "joint_attention_dim": TEXT_HIDDEN,
            "caption_projection_dim": self.hidden,
            "pooled_projection_dim": TEXT_PROJECTION,
        }


def build_sized_sd3(directory: Path, size: SD3Size) -> Path:
    """Build the model into ``directory`` (seeded, in a fresh interpreter so no process group interferes)."""
    code = (
        "import sys, json; from pathlib import Path; from trainer.models.sized_sd3 import SD3Size, write_sized_sd3; "
        "write_sized_sd3(Path(sys.argv[1]), SD3Size(**json.loads(sys.argv[2])))"
    )
    subprocess.run([sys.executable, "-c", code, str(directory), json.dumps(asdict(size))], check=True)
    return directory


def write_sized_sd3(directory: Path, size: SD3Size) -> None:
    import diffusers
    import transformers

    from trainer.models.builtin_tiny import build_tiny_sd3

    diffusers.utils.logging.disable_progress_bar()
    transformers.utils.logging.disable_progress_bar()
    if size.hidden % HEAD_DIM:
        raise ValueError(f"hidden must be a multiple of {HEAD_DIM}; got {size.hidden}")
    torch.manual_seed(BUILD_SEED)
    build_tiny_sd3(directory, vocabulary(), size.transformer_config())
    index = {"_class_name": "SfumatoSizedSD3", "family": "sd3", "seed": BUILD_SEED, **asdict(size)}
    (directory / "model_index.json").write_text(json.dumps(index, indent=2))
