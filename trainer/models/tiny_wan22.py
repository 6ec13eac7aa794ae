"""A tiny Wan 2.2 TI2V-5B: its transformer and VAE layout, built small from configs.

From Wan-AI/Wan2.2-TI2V-5B (Wan-Video/Wan2.2 ``wan/configs/wan_ti2v_5B.py``; diffusers' ``AutoencoderKLWan``
docs): the VAE is Wan 2.2's, ``z_dim`` 48, ``is_residual``, pixels folded 2 × 2 into 12 channels before the
encoder (``patch_size`` 2), so 16× in space and 4× in time (``vae_stride`` (4, 16, 16)); the transformer
takes 48 latent channels in patches of (1, 2, 2) with qk RMS norm across heads. The scheduler is UniPC on
flow sigmas with ``flow_shift`` 5.0, the checkpoint's ``sample_shift`` (the Hub's scheduler_config.json is not
readable here; the Wan config gives the value the diffusers conversion writes). ``model_index.json`` sets
WanPipeline's ``expand_timesteps``, as the Diffusers checkpoint's does. Width, depth and the VAE's channels
are tiny; 5 frames of 64 × 64 px are 48 channels × 2 latent frames × 4 × 4.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch

from trainer.models.builtin_tiny import BUILD_SEED, vocabulary
from trainer.models.tiny_wan import SCHEDULER_CONFIG, TRANSFORMER_CONFIG, build_tiny_wan

LATENT_CHANNELS = 48
TINY_SIZE = (64, 64, 5)  # height, width, frames: a spec's model.resolution and model.num_frames for it

VAE_CONFIG = {
    "base_dim": 16,
    "decoder_base_dim": 16,
    "z_dim": LATENT_CHANNELS,
    "dim_mult": [1, 1, 1, 1],
    "num_res_blocks": 1,
    "temperal_downsample": [False, True, True],
    "is_residual": True,
    "in_channels": 12,
    "out_channels": 12,
    "patch_size": 2,
    "scale_factor_spatial": 16,
    "scale_factor_temporal": 4,
    "latents_mean": [0.0] * LATENT_CHANNELS,
    "latents_std": [1.0] * LATENT_CHANNELS,
}
TRANSFORMER_22_CONFIG = {**TRANSFORMER_CONFIG, "in_channels": LATENT_CHANNELS, "out_channels": LATENT_CHANNELS}
SCHEDULER_22_CONFIG = {**SCHEDULER_CONFIG, "flow_shift": 5.0}


def build_tiny_wan22(directory: Path) -> Path:
    """The tiny TI2V-5B written with ``save_pretrained`` as a WanPipeline folder with ``expand_timesteps``."""
    torch.manual_seed(BUILD_SEED)
    build_tiny_wan(directory, vocabulary(), TRANSFORMER_22_CONFIG, VAE_CONFIG, SCHEDULER_22_CONFIG)
    index = {"_class_name": "WanPipeline", "expand_timesteps": True, "variant": "wan2.2-ti2v-5b", "seed": BUILD_SEED}
    (directory / "model_index.json").write_text(json.dumps(index, indent=2))
    return directory
