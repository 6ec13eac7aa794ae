"""A tiny FLUX.1 Kontext: FluxKontextPipeline's components, built small from configs.

The tiny FLUX model's pieces (``trainer/models/tiny_flux.py``: CLIP and T5 text encoders on a word-level tokenizer,
the colour-carrying VAE, 4 × 8 × 8 latents, 32 px images) with the transformer guidance-distilled as
black-forest-labs/FLUX.1-Kontext-dev's is (``guidance_embeds``). Its scheduler config is FLUX.1-dev's, which
Kontext-dev ships unchanged. ``model_index.json`` names the pipeline and its components, so the folder loads with
``FluxKontextPipeline.from_pretrained`` and the spec reads its family from it.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from trainer.models.builtin_tiny import BUILD_SEED, vocabulary
from trainer.models.tiny_flux import TRANSFORMER_CONFIG, build_tiny_flux

KONTEXT_TRANSFORMER_CONFIG = {**TRANSFORMER_CONFIG, "guidance_embeds": True}
TINY_SIZE = (32, 32)  # height, width: the spec's model.resolution for it

MODEL_INDEX = {
    "_class_name": "FluxKontextPipeline",
    "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
    "text_encoder": ["transformers", "CLIPTextModel"],
    "text_encoder_2": ["transformers", "T5EncoderModel"],
    "tokenizer": ["transformers", "PreTrainedTokenizerFast"],
    "tokenizer_2": ["transformers", "PreTrainedTokenizerFast"],
    "transformer": ["diffusers", "FluxTransformer2DModel"],
    "vae": ["diffusers", "AutoencoderKL"],
    "image_encoder": [None, None],
    "feature_extractor": [None, None],
}


def build_tiny_flux_kontext(directory: Path) -> Path:
    """The tiny Kontext written with ``save_pretrained`` as a FluxKontextPipeline folder."""
    torch.manual_seed(BUILD_SEED)
    build_tiny_flux(directory, vocabulary(), KONTEXT_TRANSFORMER_CONFIG)
    (directory / "model_index.json").write_text(json.dumps(MODEL_INDEX, indent=2))
    return directory
