"""The built-in tiny FLUX model: ``FluxTransformer2DModel`` with FluxPipeline's component layout.

A CLIP text encoder gives the pooled embedding, a T5 encoder the sequence; both read the
word-level tokenizer. Latents are 4 × 8 × 8 (packed by the family into 16 patches of 2 × 2 × 4)
and decode through the same colour-carrying tiny VAE as the SD3 model (32 px images).
"""

from __future__ import annotations

from pathlib import Path

from trainer.models.tiny_t5 import tiny_t5_config
from trainer.models.tiny_vae import LATENT_CHANNELS, build_colour_vae
from trainer.models.word_tokenizer import word_tokenizer

LATENT_SIZE = 8
TEXT_HIDDEN = 32
MAX_TOKENS = 16

TRANSFORMER_CONFIG = {
    "patch_size": 1,
    "in_channels": LATENT_CHANNELS * 4,
    "num_layers": 1,
    "num_single_layers": 1,
    "attention_head_dim": 16,
    "num_attention_heads": 2,
    "joint_attention_dim": TEXT_HIDDEN,
    "pooled_projection_dim": TEXT_HIDDEN,
    "guidance_embeds": False,
    "axes_dims_rope": (4, 6, 6),
}

# black-forest-labs/FLUX.1-dev's scheduler/scheduler_config.json: shift by the image's token count.
SCHEDULER_CONFIG = {
    "num_train_timesteps": 1000,
    "shift": 3.0,
    "use_dynamic_shifting": True,
    "base_shift": 0.5,
    "max_shift": 1.15,
    "base_image_seq_len": 256,
    "max_image_seq_len": 4096,
}


def build_tiny_flux(directory: Path, words: list[str], transformer: dict | None = None) -> None:
    """Components from configs (the caller seeds torch), saved as a FluxPipeline directory; the transformer's
    config is ``TRANSFORMER_CONFIG`` unless given."""
    from diffusers import FlowMatchEulerDiscreteScheduler, FluxTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModel, T5Config, T5EncoderModel

    tokenizer = word_tokenizer(words, MAX_TOKENS)
    FluxTransformer2DModel(**(transformer or TRANSFORMER_CONFIG)).save_pretrained(directory / "transformer")
    FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG).save_pretrained(directory / "scheduler")
    build_colour_vae(LATENT_SIZE).save_pretrained(directory / "vae")
    clip = CLIPTextConfig(
        vocab_size=len(tokenizer),
        hidden_size=TEXT_HIDDEN,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        max_position_embeddings=MAX_TOKENS,
        pad_token_id=0,
        bos_token_id=2,
        eos_token_id=3,
    )
    CLIPTextModel(clip).save_pretrained(directory / "text_encoder")
    T5EncoderModel(T5Config(**tiny_t5_config(len(tokenizer), TEXT_HIDDEN))).save_pretrained(
        directory / "text_encoder_2"
    )
    tokenizer.save_pretrained(directory / "tokenizer")
    tokenizer.save_pretrained(directory / "tokenizer_2")
