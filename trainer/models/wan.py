"""The Wan family: ``WanTransformer3DModel`` on video latents [C, F, H, W], a UMT5 text encoder,
and the ``AutoencoderKLWan`` video VAE.

Prompt embeddings are zeroed past each prompt's length, as WanPipeline does. The transformer
takes the timestep 1000σ. Videos are ``num_frames`` × ``height`` × ``width`` pixels, checked here
against the checkpoint's own VAE scale factors and patch size (the spec checks Wan 2.1's: 8 × 2
in space, 4 in time). ``decode`` returns videos [B, F, 3, H, W]; rewards score every frame and
average (``trainer/rewards/registry.py``).

Wan 2.2 TI2V-5B is the same pipeline with a 48-channel VAE that compresses 16× in space (``z_dim`` 48,
``patch_size`` 2) and ``expand_timesteps`` in its ``model_index.json``: WanPipeline then gives the transformer
one timestep per latent patch token, t on every token in text-to-video (in image-to-video the conditioning
frame's tokens get 0, the later edit/I2V family's part). Its LoRA targets are Flow-Factory's Wan list.
"""

from __future__ import annotations

import json
from pathlib import Path

import torch
from torch import nn

from trainer.models.base import Conditioning, ModelFamily, denormalised, latent_size
from trainer.sampling.schedule import CheckpointSchedule
from trainer.spec import SpecError
from trainer.spec.model import WAN_PIPELINE_SIZE

PIPELINE_SIZE = WAN_PIPELINE_SIZE  # WanPipeline's default height, width and frames
# Flow-Factory's Wan LoRA (src/flow_factory/models/wan/wan2_t2v.py, default_target_modules): self- and
# cross-attention projections and the feed-forward, as its wan22 recipes train them.
WAN22_LORA_TARGETS = (
    "attn1.to_q",
    "attn1.to_k",
    "attn1.to_v",
    "attn1.to_out.0",
    "attn2.to_q",
    "attn2.to_k",
    "attn2.to_v",
    "attn2.to_out.0",
    "ffn.net.0.proj",
    "ffn.net.2",
)


class WanFamily(ModelFamily):
    lora_targets = ("to_q", "to_k", "to_v", "to_out.0")
    text_encoder_fields = ("text_encoder",)
    text_tokens: int | None = None  # prompt embeddings' length; None: the tokenizer's model_max_length

    def __init__(
        self, directory: Path, device: torch.device, dtype: torch.dtype, size: tuple[int, int, int] = PIPELINE_SIZE
    ) -> None:
        from diffusers import AutoencoderKLWan, WanTransformer3DModel
        from transformers import AutoTokenizer, UMT5EncoderModel

        if (directory / "transformer_2").is_dir():
            message = f"{directory} has two experts (Wan 2.2 A14B's transformer_2): one transformer is trained here"
            raise SpecError("model.path", message)
        self.schedule = CheckpointSchedule.load(directory, "wan")
        self.expand_timesteps = expands_timesteps(directory)
        if self.expand_timesteps:
            self.lora_targets = WAN22_LORA_TARGETS
        self.device = device
        self.encoder_device = device  # where the text encoders run (model.text_encoders)
        transformer = WanTransformer3DModel.from_pretrained(directory / "transformer", torch_dtype=dtype)
        self.transformer = transformer.to(device)
        self.vae = AutoencoderKLWan.from_pretrained(directory / "vae").to(device).eval().requires_grad_(False)
        encoder = UMT5EncoderModel.from_pretrained(directory / "text_encoder")
        self.text_encoder = encoder.to(device).eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer")
        self.latent_shape = (self.transformer.config.out_channels, *self.latent_size(*size))
        frames, height, width = self.latent_shape[1:]
        patch_frames, patch_height, patch_width = self.transformer.config.patch_size
        self.image_tokens = (frames // patch_frames) * (height // patch_height) * (width // patch_width)

    def latent_size(self, height: int, width: int, frames: int) -> tuple[int, int, int]:
        """(latent frames, latent height, latent width) for a video size this checkpoint can take."""
        temporal, spatial = self.vae.config.scale_factor_temporal, self.vae.config.scale_factor_spatial
        patch_frames, patch_height, patch_width = self.transformer.config.patch_size
        if (frames - 1) % temporal or ((frames - 1) // temporal + 1) % patch_frames:
            raise SpecError("model.num_frames", f"this checkpoint needs {temporal}k+1 frames; got {frames}")
        if patch_height != patch_width:
            raise SpecError("model.path", f"a Wan transformer patches squares; this one {patch_height} × {patch_width}")
        latent_height, latent_width = latent_size((height, width), spatial, patch_height)
        return (frames - 1) // temporal + 1, latent_height, latent_width

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        tokens = self.tokenizer(
            prompts,
            padding="max_length",
            max_length=self.text_tokens or self.tokenizer.model_max_length,
            truncation=True,
            return_attention_mask=True,
            return_tensors="pt",
        ).to(self.encoder_device)
        hidden = self.text_encoder(tokens.input_ids, tokens.attention_mask).last_hidden_state
        return Conditioning(hidden * tokens.attention_mask.unsqueeze(-1))

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        dtype = x.dtype
        timestep = sigma.float() * 1000  # the pipeline's fp32 t
        if self.expand_timesteps:
            timestep = timestep[:, None].expand(-1, self.image_tokens)
        return module(
            hidden_states=x,
            timestep=timestep,
            encoder_hidden_states=cond.hidden.to(dtype),
            return_dict=False,
        )[0]

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        video = self.vae.decode(denormalised(latents, self.vae), return_dict=False)[0]  # [B, 3, F, H, W]
        return (video.float() / 2 + 0.5).clamp(0, 1).transpose(1, 2)


def expands_timesteps(directory: Path) -> bool:
    """Whether the folder's WanPipeline config sets ``expand_timesteps`` (Wan 2.2 TI2V-5B)."""
    index = directory / "model_index.json"
    return index.is_file() and bool(json.loads(index.read_text()).get("expand_timesteps"))
