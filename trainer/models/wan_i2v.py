"""Wan 2.1 image-to-video (``model.family: wan_i2v``): WanImageToVideoPipeline's transformer call, trained.

Each prompt row comes with its conditioning image, encoded two ways, once per row, as the pipeline encodes it
(diffusers ``pipelines/wan/pipeline_wan_i2v.py``): the CLIP vision encoder's penultimate hidden states go to the
transformer as ``encoder_hidden_states_image``; the image, resized to the video's size and followed by
``num_frames`` − 1 black frames, is VAE-encoded (the distribution's mode, normalised by ``latents_mean`` and
``latents_std``) and, behind the 4-channel first-frame mask, concatenated to the noisy latents on the channel
axis (the transformer's ``in_channels`` = 2 × ``z_dim`` + 4). Both are fixed per row: the policy only ever
denoises the ``z_dim`` channels, and the unconditional pass of classifier-free guidance reads the same image
with the empty prompt, as the pipeline's does.

Prompt embeddings are 512 tokens long, the pipeline's ``max_sequence_length``: the transformer's attention
processor splits its context into image and text tokens by that length.

Wan 2.2's image-to-video checkpoints are refused: A14B has two experts (``transformer_2``), and TI2V-5B
(``expand_timesteps``) replaces the first latent frame with the image's latents at every step and in the
decoded video, which a sampler that decodes the trained latents alone does not reproduce (docs/trainer.md).
"""

from __future__ import annotations

from pathlib import Path

import torch
from PIL import Image
from torch import nn

from trainer.edit_prompt import conditioning_image
from trainer.models.base import Conditioning
from trainer.models.wan import PIPELINE_SIZE, WAN22_LORA_TARGETS, WanFamily, expands_timesteps
from trainer.spec import SpecError

TEXT_TOKENS = 512  # WanImageToVideoPipeline's max_sequence_length, which WanAttnProcessor's split assumes


class WanI2VFamily(WanFamily):
    # Flow-Factory's Wan I2V adapter (src/flow_factory/models/wan/wan2_i2v.py, default_target_modules).
    lora_targets = WAN22_LORA_TARGETS
    text_encoder_fields = ("text_encoder", "image_encoder")
    text_tokens = TEXT_TOKENS

    def __init__(
        self, directory: Path, device: torch.device, dtype: torch.dtype, size: tuple[int, int, int] = PIPELINE_SIZE
    ) -> None:
        from diffusers.video_processor import VideoProcessor
        from transformers import CLIPImageProcessor, CLIPVisionModel

        if expands_timesteps(directory):
            message = f"{directory} is Wan 2.2 TI2V-5B (expand_timesteps): its image-to-video mode is not trained here"
            raise SpecError("model.path", message)
        if not (directory / "image_encoder").is_dir():
            message = f"{directory} has no image_encoder: wan_i2v needs Wan 2.1 I2V's CLIP vision encoder"
            raise SpecError("model.path", message)
        super().__init__(directory, device, dtype, size)
        self.size = size
        encoder = CLIPVisionModel.from_pretrained(directory / "image_encoder")
        self.image_encoder = encoder.to(device).eval().requires_grad_(False)
        self.image_processor = CLIPImageProcessor.from_pretrained(directory / "image_processor")
        self.video_processor = VideoProcessor(vae_scale_factor=self.vae.config.scale_factor_spatial)

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        """Each row's text, and its conditioning image: CLIP's tokens in ``image_tokens``, the masked condition
        latents in ``image``."""
        cond = super().encode_prompts(prompts)
        encoded = [self.encode_image(Image.open(self.row_image(p)).convert("RGB")) for p in prompts]
        cond.image_tokens = torch.cat([tokens for tokens, _ in encoded])
        cond.image = torch.cat([condition for _, condition in encoded])
        return cond

    def row_image(self, prompt: str) -> Path:
        image = conditioning_image(prompt)
        if image is None:
            raise SpecError("prompts.source", f"wan_i2v animates an image; prompt {str(prompt)!r} came without one")
        return image

    @torch.no_grad()
    def encode_image(self, image: Image.Image) -> tuple[torch.Tensor, torch.Tensor]:
        """(CLIP image tokens [1, N, image_dim], condition [1, 4 + z_dim, F, H, W]) of one conditioning image."""
        pixels = self.image_processor(images=image, return_tensors="pt").pixel_values.to(self.encoder_device)
        tokens = self.image_encoder(pixel_values=pixels, output_hidden_states=True).hidden_states[-2]
        return tokens.to(self.device), self.condition_latents(image)

    def condition_latents(self, image: Image.Image) -> torch.Tensor:
        """The image then black frames, VAE-encoded and normalised, behind the mask that marks latent frame 0."""
        height, width, frames = self.size
        first = self.video_processor.preprocess(image, height=height, width=width).to(self.device, torch.float32)
        video = torch.cat([first.unsqueeze(2), first.new_zeros(1, 3, frames - 1, height, width)], dim=2)
        latents = self.vae.encode(video.to(self.vae.dtype)).latent_dist.mode().float()
        config = self.vae.config
        mean = torch.tensor(config.latents_mean, device=self.device).view(1, -1, 1, 1, 1)
        inverse_std = 1.0 / torch.tensor(config.latents_std, device=self.device).view(1, -1, 1, 1, 1)
        mask = torch.zeros(1, config.scale_factor_temporal, *latents.shape[2:], device=self.device)
        mask[:, :, 0] = 1
        return torch.cat([mask, (latents - mean) * inverse_std], dim=1)

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        dtype = x.dtype
        return module(
            hidden_states=torch.cat([x, cond.image.to(dtype)], dim=1),  # type: ignore[union-attr]
            timestep=sigma.float() * 1000,  # the pipeline's fp32 t
            encoder_hidden_states=cond.hidden.to(dtype),
            encoder_hidden_states_image=cond.image_tokens.to(dtype),  # type: ignore[union-attr]
            return_dict=False,
        )[0]
