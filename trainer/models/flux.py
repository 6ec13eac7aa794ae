"""The FLUX family: ``FluxTransformer2DModel``, CLIP pooled + T5 sequence text embeddings.

The trainer keeps latents unpacked, [C, H, W], like every family; ``forward`` packs them into
FluxPipeline's 2 × 2 patches ([B, HW/4, 4C]) with their position ids and unpacks the velocity.
The transformer takes σ itself as its timestep (the pipeline's t / 1000). A guidance-distilled
checkpoint (FLUX.1-dev, ``guidance_embeds``) gets the distilled guidance scale as an input.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from trainer.models.base import Conditioning, ModelFamily, latent_size, vae_scale
from trainer.sampling.schedule import CheckpointSchedule

DISTILLED_GUIDANCE = 3.5  # FLUX.1-dev's default guidance (its diffusers pipeline's guidance_scale)


class FluxFamily(ModelFamily):
    lora_targets = ("to_q", "to_k", "to_v", "to_out.0")
    text_encoder_fields = ("clip", "t5")
    distilled_guidance = DISTILLED_GUIDANCE

    def __init__(
        self, directory: Path, device: torch.device, dtype: torch.dtype, resolution: tuple[int, int] | None = None
    ) -> None:
        from diffusers import AutoencoderKL, FluxTransformer2DModel
        from transformers import AutoTokenizer, CLIPTextModel, T5EncoderModel

        self.schedule = CheckpointSchedule.load(directory, "flux")
        self.device = device
        self.encoder_device = device  # where the text encoders run (model.text_encoders)
        transformer = FluxTransformer2DModel.from_pretrained(directory / "transformer", torch_dtype=dtype)
        self.transformer = transformer.to(device)
        self.vae = AutoencoderKL.from_pretrained(directory / "vae").to(device).eval().requires_grad_(False)
        self.clip = CLIPTextModel.from_pretrained(directory / "text_encoder").to(device).eval().requires_grad_(False)
        self.t5 = T5EncoderModel.from_pretrained(directory / "text_encoder_2").to(device).eval().requires_grad_(False)
        self.clip_tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer")
        self.t5_tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer_2")
        channels = self.transformer.config.in_channels // 4
        scale = vae_scale(self.vae)
        pixels = resolution or (self.vae.config.sample_size, self.vae.config.sample_size)
        height, width = latent_size(pixels, scale, 2)
        self.latent_shape = (channels, height, width)
        self.image_tokens = (height // 2) * (width // 2)  # FluxPipeline's packed 2 × 2 patches: μ counts them

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        clip_tokens = self.clip_tokenizer(
            prompts,
            padding="max_length",
            max_length=self.clip_tokenizer.model_max_length,
            truncation=True,
            return_tensors="pt",
        ).to(self.encoder_device)
        pooled = self.clip(input_ids=clip_tokens.input_ids).pooler_output
        t5_tokens = self.t5_tokenizer(
            prompts,
            padding="max_length",
            max_length=self.t5_tokenizer.model_max_length,
            truncation=True,
            return_tensors="pt",
        ).to(self.encoder_device)
        hidden = self.t5(input_ids=t5_tokens.input_ids).last_hidden_state
        return Conditioning(hidden, pooled)

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        _, channels, height, width = x.shape
        out = self.transformer_call(module, pack(x), image_ids(height, width, x.device, x.dtype), sigma, cond)
        return unpack(out, channels, height, width)

    def transformer_call(
        self, module: nn.Module, tokens: torch.Tensor, ids: torch.Tensor, sigma: torch.Tensor, cond: Conditioning
    ) -> torch.Tensor:
        """The transformer on packed image tokens [B, N, 4C] with their position ids [N, 3]: the velocity tokens."""
        dtype = tokens.dtype
        guidance = None
        if self.transformer.config.guidance_embeds:
            guidance = torch.full((tokens.shape[0],), self.distilled_guidance, device=tokens.device, dtype=dtype)
        return module(
            hidden_states=tokens,
            encoder_hidden_states=cond.hidden.to(dtype),
            pooled_projections=cond.pooled.to(dtype),  # type: ignore[union-attr]
            timestep=sigma.float(),  # σ = t / 1000 in fp32, never rounded to the compute precision
            img_ids=ids,
            txt_ids=torch.zeros(cond.hidden.shape[1], 3, device=tokens.device, dtype=dtype),
            guidance=guidance,
            return_dict=False,
        )[0]

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        config = self.vae.config
        latents = latents.float() / config.scaling_factor + (config.shift_factor or 0.0)
        images = self.vae.decode(latents.to(self.vae.dtype), return_dict=False)[0]  # the compute precision
        return (images.float() / 2 + 0.5).clamp(0, 1)


def pack(x: torch.Tensor) -> torch.Tensor:
    """[B, C, H, W] → [B, (H/2)(W/2), 4C], FluxPipeline's ``_pack_latents``."""
    batch, channels, height, width = x.shape
    x = x.view(batch, channels, height // 2, 2, width // 2, 2).permute(0, 2, 4, 1, 3, 5)
    return x.reshape(batch, (height // 2) * (width // 2), channels * 4)


def unpack(x: torch.Tensor, channels: int, height: int, width: int) -> torch.Tensor:
    batch = x.shape[0]
    x = x.view(batch, height // 2, width // 2, channels, 2, 2).permute(0, 3, 1, 4, 2, 5)
    return x.reshape(batch, channels, height, width)


def image_ids(height: int, width: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """(0, row, column) per packed patch, FluxPipeline's ``_prepare_latent_image_ids``."""
    ids = torch.zeros(height // 2, width // 2, 3)
    ids[..., 1] = torch.arange(height // 2)[:, None]
    ids[..., 2] = torch.arange(width // 2)[None, :]
    return ids.reshape(-1, 3).to(device=device, dtype=dtype)
