"""Tiny SD3.5 Medium and Large models: the built-in tiny SD3 model with SD3.5's transformer architecture.

SD3.5 is ``StableDiffusion3Pipeline`` with an ``SD3Transformer2DModel`` that normalises queries and keys
(``qk_norm: rms_norm``, Medium and Large) and, in Medium, gives its first 13 joint blocks a second
image-only attention (``dual_attention_layers``, MMDiT-X). Those keys come from the published
``transformer/config.json`` of stabilityai/stable-diffusion-3.5-medium (``dual_attention_layers`` 0-12 of 24
layers) and stable-diffusion-3.5-large (none of 38); the scheduler config is theirs too (SD3's, ``shift`` 3.0,
``builtin_tiny.SCHEDULER_CONFIG``). The tiny model keeps width and depth tiny and Medium's first block dual.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

import torch

from trainer.models.builtin_tiny import BUILD_SEED, TRANSFORMER_CONFIG, build_tiny_sd3, vocabulary

SD35Variant = Literal["medium", "large"]

# The architecture keys of the published transformer configs that set SD3.5 apart from SD3 (Medium's dual
# layers scaled to the tiny model's two blocks: the first block dual, as Medium's first 13 of 24 are).
SD35_ARCHITECTURE: dict[str, dict[str, object]] = {
    "medium": {"qk_norm": "rms_norm", "dual_attention_layers": (0,)},
    "large": {"qk_norm": "rms_norm", "dual_attention_layers": ()},
}


def build_tiny_sd35(directory: Path, variant: SD35Variant) -> Path:
    """The tiny SD3.5 ``variant`` written with ``save_pretrained`` as a StableDiffusion3Pipeline folder."""
    torch.manual_seed(BUILD_SEED)
    build_tiny_sd3(directory, vocabulary(), {**TRANSFORMER_CONFIG, **SD35_ARCHITECTURE[variant]})
    index = {"_class_name": "StableDiffusion3Pipeline", "variant": f"sd3.5-{variant}", "seed": BUILD_SEED}
    (directory / "model_index.json").write_text(json.dumps(index, indent=2))
    return directory
