"""The built-in tiny Wan model: ``WanTransformer3DModel`` with WanPipeline's component layout.

The VAE is a tiny ``AutoencoderKLWan`` with Wan's compression, 8× in space and 4× in time (the
real video VAE class, so real checkpoints take the same decode path), and the transformer patches
2 × 2 as Wan does: the default 5 frames of 32 × 32 px are 4 channels × 2 latent frames × 4 × 4, and
every size the spec allows for Wan (``model.resolution``, ``num_frames``; default
``trainer.spec.model.WAN_TINY_SIZE``) fits. Its weights are
random, so unlike the SD3 and FLUX tiny models its colours barely follow the latents: it checks the
plumbing, not learning. The text encoder is a tiny UMT5 on the word-level tokenizer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.models.tiny_t5 import tiny_t5_config
from trainer.models.tiny_vae import LATENT_CHANNELS
from trainer.models.word_tokenizer import word_tokenizer

TEXT_HIDDEN = 32
MAX_TOKENS = 16

TRANSFORMER_CONFIG = {
    "patch_size": (1, 2, 2),
    "num_attention_heads": 2,
    "attention_head_dim": 16,
    "in_channels": LATENT_CHANNELS,
    "out_channels": LATENT_CHANNELS,
    "text_dim": TEXT_HIDDEN,
    "freq_dim": 32,
    "ffn_dim": 64,
    "num_layers": 2,
    "rope_max_seq_len": 32,
}

VAE_CONFIG = {
    "base_dim": 8,
    "z_dim": LATENT_CHANNELS,
    "dim_mult": [1, 1, 1, 1],
    "num_res_blocks": 1,
    "temperal_downsample": [False, True, True],
    "scale_factor_spatial": 8,
    "scale_factor_temporal": 4,
    "latents_mean": [0.0] * LATENT_CHANNELS,
    "latents_std": [1.0] * LATENT_CHANNELS,
}

# Wan-AI/Wan2.1-T2V-1.3B-Diffusers' scheduler: UniPC on flow sigmas, flow_shift 3 (WanPipeline's default).
SCHEDULER_CONFIG = {
    "num_train_timesteps": 1000,
    "prediction_type": "flow_prediction",
    "use_flow_sigmas": True,
    "flow_shift": 3.0,
    "solver_order": 2,
    "final_sigmas_type": "zero",
}


def build_tiny_wan(
    directory: Path,
    words: list[str],
    transformer: dict[str, Any] = TRANSFORMER_CONFIG,
    vae: dict[str, Any] = VAE_CONFIG,
    scheduler: dict[str, Any] = SCHEDULER_CONFIG,
) -> None:
    """Components from configs (the caller seeds torch), saved as a WanPipeline directory (Wan 2.1's configs
    unless given: ``tiny_wan22.py`` gives Wan 2.2 TI2V-5B's)."""
    from diffusers import AutoencoderKLWan, UniPCMultistepScheduler, WanTransformer3DModel
    from transformers import UMT5Config, UMT5EncoderModel

    tokenizer = word_tokenizer(words, MAX_TOKENS)
    WanTransformer3DModel(**transformer).save_pretrained(directory / "transformer")
    AutoencoderKLWan(**vae).save_pretrained(directory / "vae")
    UniPCMultistepScheduler(**scheduler).save_pretrained(directory / "scheduler")
    umt5 = UMT5Config(**tiny_t5_config(len(tokenizer), TEXT_HIDDEN))
    UMT5EncoderModel(umt5).save_pretrained(directory / "text_encoder")
    tokenizer.save_pretrained(directory / "tokenizer")
