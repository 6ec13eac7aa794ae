"""FLUX.1 Kontext (``model.family: flux_kontext``): FLUX.1 that edits a conditioning image, each prompt row's own.

As diffusers' FluxKontextPipeline does (pipelines/flux/pipeline_flux_kontext.py): the row's image is resized and
normalised by the pipeline's ``VaeImageProcessor``, VAE-encoded at the latent distribution's mode ("argmax"),
shifted and scaled (``_encode_vae_image``), packed into 2 × 2 patches, and its tokens follow the noisy tokens in
the transformer's sequence with position ids whose first coordinate is 1 (the noisy tokens' is 0); the velocity is
the output's first tokens, the noisy ones. The σ grid counts the noisy tokens only (its ``image_seq_len``), as
FLUX's. The image is resized to the job's resolution, one size for every row, as Flow-Factory's Kontext adapter
resizes each condition image to one ``condition_image_size`` (src/flow_factory/models/flux/flux1_kontext.py). The
encoded image travels in ``Conditioning.image``, so every executor's velocity call carries it.
"""

from __future__ import annotations

from pathlib import Path

import torch
from torch import nn

from trainer.edit_prompt import required_image
from trainer.models.base import Conditioning, vae_scale
from trainer.models.flux import FluxFamily, image_ids, pack, unpack

# Flow-Factory's Kontext LoRA (src/flow_factory/models/flux/flux1_kontext.py, default_target_modules): both
# streams' attention projections and feed-forwards.
LORA_TARGETS = (
    "attn.to_k",
    "attn.to_q",
    "attn.to_v",
    "attn.to_out.0",
    "attn.add_k_proj",
    "attn.add_q_proj",
    "attn.add_v_proj",
    "attn.to_add_out",
    "ff.net.0.proj",
    "ff_context.net.0.proj",
    "ff.net.2",
    "ff_context.net.2",
)


# The distilled guidance Kontext-dev is run with: its model card's and Flow-Factory's Kontext recipes'
# (examples/grpo/lora/flux1_kontext/default.yaml, guidance_scale 2.5); FluxKontextPipeline defaults to 3.5.
KONTEXT_GUIDANCE = 2.5


class FluxKontextFamily(FluxFamily):
    lora_targets = LORA_TARGETS
    distilled_guidance = KONTEXT_GUIDANCE

    def __init__(
        self, directory: Path, device: torch.device, dtype: torch.dtype, resolution: tuple[int, int] | None = None
    ) -> None:
        from diffusers.image_processor import VaeImageProcessor

        super().__init__(directory, device, dtype, resolution)
        self.scale = vae_scale(self.vae)
        self.image_processor = VaeImageProcessor(vae_scale_factor=self.scale * 2)  # the pipeline's

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        cond = super().encode_prompts(prompts)
        cond.image = self.encode_images([required_image(p, "flux_kontext") for p in prompts])
        return cond

    def encode_images(self, paths: list[Path]) -> torch.Tensor:
        """The images' latents [B, C, h, w] at the job's latent size, as ``_encode_vae_image`` makes them."""
        from PIL import Image

        _, height, width = self.latent_shape
        pixels = (height * self.scale, width * self.scale)
        images = [Image.open(path).convert("RGB") for path in paths]
        resized = self.image_processor.resize(images, *pixels)
        tensor = self.image_processor.preprocess(resized, *pixels).to(self.vae.device, self.vae.dtype)
        latents = self.vae.encode(tensor).latent_dist.mode()
        config = self.vae.config
        return ((latents - (config.shift_factor or 0.0)) * config.scaling_factor).float()

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        _, channels, height, width = x.shape
        image = cond.image.to(x.dtype)  # type: ignore[union-attr]
        context_ids = image_ids(image.shape[2], image.shape[3], x.device, x.dtype)
        context_ids[:, 0] = 1  # the pipeline's image ids: the noisy tokens' with the first coordinate 1
        ids = torch.cat([image_ids(height, width, x.device, x.dtype), context_ids])
        tokens = torch.cat([pack(x), pack(image)], dim=1)
        out = self.transformer_call(module, tokens, ids, sigma, cond)[:, : (height // 2) * (width // 2)]
        return unpack(out, channels, height, width)
