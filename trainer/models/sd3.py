"""The SD3 family: ``SD3Transformer2DModel`` with one CLIP text encoder (the built-in tiny layout).

Real SD3 checkpoints ship three text encoders; this loader reads the ``text_encoder`` /
``tokenizer`` pair only, which is exactly the built-in tiny model's layout.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from trainer.models.base import Conditioning, ModelFamily


class SD3Family(ModelFamily):
    lora_targets = ("to_q", "to_k", "to_v", "to_out.0")

    def __init__(self, directory: Path, device: torch.device, dtype: torch.dtype) -> None:
        from diffusers import AutoencoderKL, SD3Transformer2DModel
        from transformers import AutoTokenizer, CLIPTextModelWithProjection

        self.device = device
        transformer = SD3Transformer2DModel.from_pretrained(directory / "transformer", torch_dtype=dtype)
        self.transformer = transformer.to(device)
        self.vae = AutoencoderKL.from_pretrained(directory / "vae").to(device).eval().requires_grad_(False)
        text_encoder = CLIPTextModelWithProjection.from_pretrained(directory / "text_encoder")
        self.text_encoder = text_encoder.to(device).eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer")
        size = self.transformer.config.sample_size
        self.latent_shape = (self.transformer.config.in_channels, size, size)

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        tokens = self.tokenizer(
            prompts,
            padding="max_length",
            max_length=self.tokenizer.model_max_length,
            truncation=True,
            return_tensors="pt",
        ).to(self.device)
        out = self.text_encoder(input_ids=tokens.input_ids)
        return Conditioning(out.last_hidden_state, out.text_embeds)

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        dtype = x.dtype
        out = module(
            hidden_states=x,
            encoder_hidden_states=cond.hidden.to(dtype),
            pooled_projections=cond.pooled.to(dtype),  # type: ignore[union-attr]
            timestep=(sigma * 1000).to(dtype),
            return_dict=False,
        )[0]
        return out

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        config = self.vae.config
        latents = latents.float() / config.scaling_factor + (config.shift_factor or 0.0)
        images = self.vae.decode(latents, return_dict=False)[0]
        return (images / 2 + 0.5).clamp(0, 1)
