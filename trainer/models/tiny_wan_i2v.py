"""A tiny Wan 2.1 image-to-video checkpoint: WanImageToVideoPipeline's folder, built small from configs.

The layout is Wan-AI/Wan2.1-I2V-14B-480P-Diffusers': a ``WanTransformer3DModel`` whose input is the noisy latents,
the 4-channel first-frame mask and the condition latents side by side (``in_channels`` = 2 × ``z_dim`` + 4, 36 in
the checkpoint), with ``image_dim`` (1280 there: CLIP ViT-H/14's width) and ``added_kv_proj_dim`` (its inner
width) for the CLIP image tokens its cross-attention reads; a ``CLIPVisionModel`` with its ``CLIPImageProcessor``;
Wan 2.1's ``AutoencoderKLWan`` (8× in space, 4× in time), UMT5 and the tiny Wan's scheduler, UniPC on flow sigmas
with ``flow_shift`` 3.0 (480P's; diffusers' Wan docs give 5.0 for 720P). Every width is tiny: CLIP sees 32 × 32 px
in 8 × 8 patches (17 tokens, 257 in the checkpoint); the default 5 frames of 32 × 32 px are 4 channels × 2 latent
frames × 4 × 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from trainer.models.builtin_tiny import BUILD_SEED, vocabulary
from trainer.models.tiny_vae import LATENT_CHANNELS
from trainer.models.tiny_wan import SCHEDULER_CONFIG, TRANSFORMER_CONFIG, VAE_CONFIG, build_tiny_wan

TINY_SIZE = (32, 32, 5)  # height, width, frames: a spec's model.resolution and model.num_frames for it
MASK_CHANNELS = 4  # the first-frame mask, one channel per frame a latent frame folds (the VAE's 4× in time)
CLIP_HIDDEN = 16
CLIP_IMAGE_SIZE = 32

TRANSFORMER_I2V_CONFIG = {
    **TRANSFORMER_CONFIG,
    "in_channels": 2 * LATENT_CHANNELS + MASK_CHANNELS,
    "out_channels": LATENT_CHANNELS,
    "image_dim": CLIP_HIDDEN,
    "added_kv_proj_dim": TRANSFORMER_CONFIG["num_attention_heads"] * TRANSFORMER_CONFIG["attention_head_dim"],
    "qk_norm": "rms_norm_across_heads",
    "cross_attn_norm": True,
}

CLIP_VISION_CONFIG = {
    "hidden_size": CLIP_HIDDEN,
    "intermediate_size": 2 * CLIP_HIDDEN,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "image_size": CLIP_IMAGE_SIZE,
    "patch_size": 8,
}

# The checkpoint's image_processor/preprocessor_config.json at the tiny encoder's size (224 there): resize the
# shorter side, centre-crop, OpenAI CLIP's mean and std.
IMAGE_PROCESSOR_CONFIG = {
    "size": {"shortest_edge": CLIP_IMAGE_SIZE},
    "crop_size": {"height": CLIP_IMAGE_SIZE, "width": CLIP_IMAGE_SIZE},
    "do_resize": True,
    "do_center_crop": True,
    "do_normalize": True,
    "do_rescale": True,
    "do_convert_rgb": True,
}

# Wan 2.1's VAE statistics (its vae/config.json), the first four channels: the condition latents are normalised by
# them, so a tiny model with mean 0 and std 1 would not tell normalising from not.
VAE_I2V_CONFIG = {
    **VAE_CONFIG,
    "latents_mean": [-0.7571, -0.7089, -0.9113, 0.1075],
    "latents_std": [2.8184, 1.4541, 2.3275, 2.6558],
}

# The folder's model_index.json: every component by its class, so WanImageToVideoPipeline.from_pretrained loads it.
MODEL_INDEX = {
    "_class_name": "WanImageToVideoPipeline",
    "boundary_ratio": None,
    "expand_timesteps": False,
    "image_encoder": ["transformers", "CLIPVisionModel"],
    "image_processor": ["transformers", "CLIPImageProcessor"],
    "scheduler": ["diffusers", "UniPCMultistepScheduler"],
    "text_encoder": ["transformers", "UMT5EncoderModel"],
    "tokenizer": ["transformers", "PreTrainedTokenizerFast"],
    "transformer": ["diffusers", "WanTransformer3DModel"],
    "transformer_2": [None, None],
    "vae": ["diffusers", "AutoencoderKLWan"],
}


def build_tiny_wan_i2v(directory: Path) -> Path:
    """The tiny Wan 2.1 I2V written with ``save_pretrained`` as a WanImageToVideoPipeline folder."""
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

    torch.manual_seed(BUILD_SEED)
    build_tiny_wan(directory, vocabulary(), TRANSFORMER_I2V_CONFIG, VAE_I2V_CONFIG, SCHEDULER_CONFIG)
    CLIPVisionModel(CLIPVisionConfig(**CLIP_VISION_CONFIG)).save_pretrained(directory / "image_encoder")
    CLIPImageProcessor(**IMAGE_PROCESSOR_CONFIG).save_pretrained(directory / "image_processor")
    (directory / "model_index.json").write_text(json.dumps(MODEL_INDEX, indent=2))
    return directory
