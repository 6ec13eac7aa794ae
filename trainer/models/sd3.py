"""The SD3 family: ``SD3Transformer2DModel`` with SD3's three text encoders.

Prompt embeddings are built as ``StableDiffusion3Pipeline.encode_prompt`` builds them: the
penultimate hidden states of CLIP-L (``text_encoder``) and CLIP-G (``text_encoder_2``) side by
side, zero-padded to the T5 width and followed along the sequence by T5's (``text_encoder_3``);
the pooled embedding is both CLIPs' projections side by side. T5 is optional, as in diffusers:
without ``text_encoder_3`` its part is zeros of the pipeline's sequence length.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from trainer.models.base import Conditioning, ModelFamily, latent_size, vae_scale
from trainer.sampling.schedule import CheckpointSchedule
from trainer.spec import SpecError

T5_SEQUENCE = 256  # StableDiffusion3Pipeline's default max_sequence_length
CLIP_SEQUENCE = 77  # the pipeline's CLIP length when a tokenizer does not say
SD3_LORA_TARGETS = ("to_q", "to_k", "to_v", "to_out.0")
# flow_grpo's SD3.5 LoRA (yifan123/flow_grpo, scripts/train_sd3.py; Flow-Factory's sd3_5.py the same): both
# streams' attention projections, r 32 and alpha 64 in its configs.
SD35_LORA_TARGETS = (
    "attn.add_k_proj",
    "attn.add_q_proj",
    "attn.add_v_proj",
    "attn.to_add_out",
    "attn.to_k",
    "attn.to_out.0",
    "attn.to_q",
    "attn.to_v",
)


class SD3Family(ModelFamily):
    """SD3 and SD3.5 (Medium, Large): one pipeline, the transformer's config says which (``is_sd35``)."""

    lora_targets = SD3_LORA_TARGETS
    text_encoder_fields = ("clips", "t5")

    def __init__(
        self, directory: Path, device: torch.device, dtype: torch.dtype, resolution: tuple[int, int] | None = None
    ) -> None:
        from diffusers import AutoencoderKL, SD3Transformer2DModel
        from transformers import AutoTokenizer, CLIPTextModelWithProjection, T5EncoderModel

        for part in ("text_encoder", "tokenizer", "text_encoder_2", "tokenizer_2"):
            if not (directory / part).is_dir():
                message = f"an SD3 directory has CLIP-L and CLIP-G text encoders; {directory} has no {part}/"
                raise SpecError("model.path", message)
        self.schedule = CheckpointSchedule.load(directory, "sd3")
        self.device = device
        self.encoder_device = device  # where the text encoders run (model.text_encoders)
        transformer = SD3Transformer2DModel.from_pretrained(directory / "transformer", torch_dtype=dtype)
        self.transformer = transformer.to(device)
        self.vae = AutoencoderKL.from_pretrained(directory / "vae").to(device).eval().requires_grad_(False)
        self.clips = [
            CLIPTextModelWithProjection.from_pretrained(directory / name).to(device).eval().requires_grad_(False)
            for name in ("text_encoder", "text_encoder_2")
        ]
        self.clip_tokenizers = [
            AutoTokenizer.from_pretrained(directory / name) for name in ("tokenizer", "tokenizer_2")
        ]
        self.t5: nn.Module | None = None
        self.t5_sequence = T5_SEQUENCE
        if (directory / "text_encoder_3").is_dir():
            self.t5 = (
                T5EncoderModel.from_pretrained(directory / "text_encoder_3").to(device).eval().requires_grad_(False)
            )
            self.t5_tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer_3")
            self.t5_sequence = min(T5_SEQUENCE, self.t5_tokenizer.model_max_length)
        config = self.transformer.config
        if is_sd35(config):
            self.lora_targets = SD35_LORA_TARGETS
        height, width = self.latent_size(resolution) if resolution else (config.sample_size, config.sample_size)
        self.latent_shape = (config.in_channels, height, width)
        self.image_tokens = (height // config.patch_size) * (width // config.patch_size)

    def latent_size(self, resolution: tuple[int, int]) -> tuple[int, int]:
        """The latent of a [height, width] image; SD3's positional table holds pos_embed_max_size patches a side."""
        config = self.transformer.config
        scale = vae_scale(self.vae)
        size = latent_size(resolution, scale, config.patch_size)
        most = (config.pos_embed_max_size or config.sample_size // config.patch_size) * config.patch_size * scale
        if max(resolution) > most:
            raise SpecError("model.resolution", f"this checkpoint's positional table takes up to {most} px a side")
        return size

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        hidden, pooled = zip(*(self.clip_embeddings(index, prompts) for index in range(2)), strict=True)
        clip_hidden = torch.cat(hidden, dim=-1)
        t5_hidden = self.t5_embeddings(prompts)
        clip_hidden = nn.functional.pad(clip_hidden, (0, t5_hidden.shape[-1] - clip_hidden.shape[-1]))
        return Conditioning(torch.cat([clip_hidden, t5_hidden], dim=-2), torch.cat(pooled, dim=-1))

    def clip_embeddings(self, index: int, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
        """(penultimate hidden states, pooled projection) of CLIP-L (0) or CLIP-G (1)."""
        tokenizer, encoder = self.clip_tokenizers[index], self.clips[index]
        # The pipeline pads both CLIPs to the first tokenizer's length.
        length = getattr(self.clip_tokenizers[0], "model_max_length", CLIP_SEQUENCE)
        tokens = tokenizer(prompts, padding="max_length", max_length=length, truncation=True, return_tensors="pt")
        out = encoder(tokens.input_ids.to(self.encoder_device), output_hidden_states=True)
        return out.hidden_states[-2], out[0]

    def t5_embeddings(self, prompts: list[str]) -> torch.Tensor:
        if self.t5 is None:
            width = self.transformer.config.joint_attention_dim
            return torch.zeros(len(prompts), self.t5_sequence, width, device=self.encoder_device)
        tokens = self.t5_tokenizer(
            prompts, padding="max_length", max_length=self.t5_sequence, truncation=True, add_special_tokens=True,
            return_tensors="pt",
        )  # fmt: skip
        return self.t5(tokens.input_ids.to(self.encoder_device))[0]

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        dtype = x.dtype
        out = module(
            hidden_states=x,
            encoder_hidden_states=cond.hidden.to(dtype),
            pooled_projections=cond.pooled.to(dtype),  # type: ignore[union-attr]
            timestep=sigma.float() * 1000,  # the pipeline's fp32 t: the embedding, not the matmuls, reads it
            return_dict=False,
        )[0]
        return out

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        config = self.vae.config
        latents = latents.float() / config.scaling_factor + (config.shift_factor or 0.0)
        images = self.vae.decode(latents.to(self.vae.dtype), return_dict=False)[0]  # the compute precision
        return (images.float() / 2 + 0.5).clamp(0, 1)


def is_sd35(config: object) -> bool:
    """SD3.5 Medium and Large normalise queries and keys (``qk_norm``); SD3-Medium does not."""
    return getattr(config, "qk_norm", None) is not None
