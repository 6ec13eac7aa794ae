"""The Wan family: ``WanTransformer3DModel`` on video latents [C, F, H, W], a UMT5 text encoder,
and the ``AutoencoderKLWan`` video VAE.

Prompt embeddings are zeroed past each prompt's length, as WanPipeline does. The transformer
takes the timestep 1000σ. ``decode`` returns videos [B, F, 3, H, W]; rewards score every frame
and average (``trainer/rewards/registry.py``).
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from trainer.models.base import Conditioning, ModelFamily


class WanFamily(ModelFamily):
    lora_targets = ("to_q", "to_k", "to_v", "to_out.0")

    def __init__(self, directory: Path, device: torch.device, dtype: torch.dtype) -> None:
        from diffusers import AutoencoderKLWan, WanTransformer3DModel
        from transformers import AutoTokenizer, UMT5EncoderModel

        from trainer.models.tiny_wan import LATENT_FRAMES, LATENT_SIZE

        self.device = device
        transformer = WanTransformer3DModel.from_pretrained(directory / "transformer", torch_dtype=dtype)
        self.transformer = transformer.to(device)
        self.vae = AutoencoderKLWan.from_pretrained(directory / "vae").to(device).eval().requires_grad_(False)
        encoder = UMT5EncoderModel.from_pretrained(directory / "text_encoder")
        self.text_encoder = encoder.to(device).eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer")
        # The spec has no resolution yet: every Wan checkpoint runs at the tiny model's latent size.
        self.latent_shape = (self.transformer.config.in_channels, LATENT_FRAMES, LATENT_SIZE, LATENT_SIZE)

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        tokens = self.tokenizer(
            prompts, padding="max_length", max_length=self.tokenizer.model_max_length, truncation=True,
            return_attention_mask=True, return_tensors="pt",
        ).to(self.device)
        hidden = self.text_encoder(tokens.input_ids, tokens.attention_mask).last_hidden_state
        return Conditioning(hidden * tokens.attention_mask.unsqueeze(-1))

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        dtype = x.dtype
        return module(
            hidden_states=x,
            timestep=(sigma * 1000).to(dtype),
            encoder_hidden_states=cond.hidden.to(dtype),
            return_dict=False,
        )[0]

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        config = self.vae.config
        shape = (1, config.z_dim, 1, 1, 1)
        mean = torch.tensor(config.latents_mean, device=latents.device).view(shape)
        std = torch.tensor(config.latents_std, device=latents.device).view(shape)
        video = self.vae.decode(latents.float() * std + mean, return_dict=False)[0]  # [B, 3, F, H, W]
        return (video / 2 + 0.5).clamp(0, 1).transpose(1, 2)
