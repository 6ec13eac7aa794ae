"""Qwen-Image-Edit (``model.family: qwen_image_edit``): Qwen-Image that edits each prompt row's image.

As diffusers' QwenImageEditPipeline does (pipelines/qwenimage/pipeline_qwenimage_edit.py):

- the instruction goes into the edit template, whose user turn opens with ``<|vision_start|><|image_pad|>
  <|vision_end|>``; the processor (``Qwen2VLProcessor``'s call) expands the pad to the image's merged patches and
  the Qwen2.5-VL encoder reads the image there with its vision tower; the last hidden states past the first 64
  tokens (``prompt_template_encode_start_idx``: the system turn and the user turn's opening) are the prompt
  embeddings, the image's tokens among them;
- the image is VAE-encoded at the latent distribution's mode ("argmax") and normalised by the VAE's
  ``latents_mean``/``latents_std`` (``_encode_vae_image``); packed into 2 × 2 patches, its tokens follow the noisy
  tokens in the transformer's sequence, ``img_shapes`` listing both grids, and the velocity is the output's first
  tokens, the noisy ones;
- the σ grid is Qwen-Image's, μ counting the noisy tokens only (its ``image_seq_len``); true CFG's negative prompt
  is read with the same image.

The pipeline resizes the image to about 1024 × 1024 px at its own aspect ratio. Rows are batched here, so every
row's image is resized to the job's resolution, one size for all (the pipeline's own at 1024 × 1024 and a square
image), as Flow-Factory's Qwen-Image-Edit adapter resizes to one ``condition_image_size``
(src/flow_factory/models/qwen_image/qwen_image_edit_plus.py). The encoded image travels in ``Conditioning.image``
([B, C, h, w], unpacked), so every executor's velocity call carries it.

A QwenImageEditPlusPipeline folder (Qwen-Image-Edit-2509/2511, ``pipeline_qwenimage_edit_plus.py``) differs in its
prompt only: the image announced as "Picture 1: " in the user's text, and the text encoder shown the image at about
384 × 384 px at its own aspect ratio (the VAE still at the job's size).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainer.edit_prompt import required_image
from trainer.models.base import Conditioning
from trainer.models.flux import pack, unpack
from trainer.models.qwen_image import QwenImageFamily
from trainer.models.tiny_qwen_image_edit import EDIT_PLUS_PROMPT_TEMPLATE, EDIT_PROMPT_TEMPLATE, PICTURE_PROMPT

EDIT_TEMPLATE_TOKENS = 64  # QwenImageEditPipeline.prompt_template_encode_start_idx (the Plus pipeline's too)
PLUS_PIPELINE = "QwenImageEditPlusPipeline"


class QwenImageEditFamily(QwenImageFamily):
    """Qwen-Image's transformer, VAE, σ grid, true CFG and LoRA targets (Flow-Factory's Qwen-Image-Edit adapter
    targets the same modules), with the row's image in the prompt and beside the noisy tokens."""

    def __init__(self, directory: Path, device: torch.device, dtype: torch.dtype, resolution: tuple[int, int]) -> None:
        from diffusers.image_processor import VaeImageProcessor

        from trainer.models.qwen_vl_processor import QwenImagesProcessor

        super().__init__(directory, device, dtype, resolution)
        index = directory / "model_index.json"
        self.plus = index.is_file() and json.loads(index.read_text()).get("_class_name") == PLUS_PIPELINE
        self.processor = QwenImagesProcessor.from_pretrained(directory / "processor")
        self.scale = 2 ** len(self.vae.config.temperal_downsample)  # the pipeline's vae_scale_factor
        self.image_processor = VaeImageProcessor(vae_scale_factor=self.scale * 2)  # the pipeline's

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        from PIL import Image

        _, height, width = self.latent_shape
        pixels = (height * self.scale, width * self.scale)
        rows = [Image.open(required_image(p, "qwen_image_edit")).convert("RGB") for p in prompts]
        images = self.image_processor.resize(rows, *pixels)
        if self.plus:
            texts = [EDIT_PLUS_PROMPT_TEMPLATE.format(PICTURE_PROMPT + p) for p in prompts]
            seen = [self.encoder_view(row) for row in rows]
        else:
            texts, seen = [EDIT_PROMPT_TEMPLATE.format(p) for p in prompts], images
        inputs = self.processor(text=texts, images=seen, padding=True, return_tensors="pt")
        cond = self.encoded_past_template(inputs, EDIT_TEMPLATE_TOKENS)
        cond.image = self.encode_images(self.image_processor.preprocess(images, *pixels))
        return cond

    def encoder_view(self, image: Any) -> Any:
        """The Plus pipeline's image for its text encoder: about 384 × 384 px at its own aspect ratio."""
        from diffusers.pipelines.qwenimage.pipeline_qwenimage_edit_plus import (
            CONDITION_IMAGE_SIZE,
            calculate_dimensions,
        )

        width, height = calculate_dimensions(CONDITION_IMAGE_SIZE, image.width / image.height)
        return self.image_processor.resize(image, height, width)

    def encode_images(self, pixels: torch.Tensor) -> torch.Tensor:
        """Images in [-1, 1] as one-frame videos' normalised latents [B, C, h, w] (``_encode_vae_image``)."""
        frames = pixels.unsqueeze(2).to(self.vae.device, self.vae.dtype)
        latents = self.vae.encode(frames).latent_dist.mode()[:, :, 0]
        config = self.vae.config
        shape = (1, config.z_dim, 1, 1)
        mean = torch.tensor(config.latents_mean, device=latents.device, dtype=latents.dtype).view(shape)
        std = torch.tensor(config.latents_std, device=latents.device, dtype=latents.dtype).view(shape)
        return ((latents - mean) / std).float()

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        batch, channels, height, width = x.shape
        image = cond.image.to(x.dtype)  # type: ignore[union-attr]
        noisy = pack(x)
        out = module(
            hidden_states=torch.cat([noisy, pack(image)], dim=1),
            timestep=sigma.float(),  # the pipeline's t / 1000 in fp32
            encoder_hidden_states=cond.hidden.to(x.dtype),
            encoder_hidden_states_mask=cond.mask,
            img_shapes=[[(1, height // 2, width // 2), (1, image.shape[2] // 2, image.shape[3] // 2)]] * batch,
            return_dict=False,
        )[0]
        return unpack(out[:, : noisy.shape[1]], channels, height, width)
