"""The Qwen-Image family: ``QwenImageTransformer2DModel``, a Qwen2.5-VL text encoder, ``AutoencoderKLQwenImage``.

Prompts are encoded as ``QwenImagePipeline.encode_prompt`` does: the prompt in the pipeline's chat template, the
last hidden states of the text encoder, the template's 34-token system turn dropped, each prompt's own length
kept with a mask (``Conditioning.cat`` pads a batch to its longest, as the pipeline pads to the longest prompt).
Latents are kept unpacked, [C, H, W]; ``forward`` packs them into 2 × 2 patches as the pipeline does (FLUX's
packing) with ``img_shapes`` and unpacks the velocity. The transformer takes t / 1000 = σ. Classifier-free
guidance is the pipeline's ``true_cfg``: the guided velocity rescaled to the conditional one's norm per patch.
The VAE is a one-frame video VAE: latents are de-normalised by its ``latents_mean``/``latents_std`` and decoded
as a single frame.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import torch
from torch import nn

from trainer.models.base import Conditioning, ModelFamily, denormalised, latent_size
from trainer.models.flux import pack, unpack
from trainer.models.tiny_qwen_image import PROMPT_TEMPLATE
from trainer.sampling.schedule import CheckpointSchedule

if TYPE_CHECKING:
    from transformers import BatchEncoding

TEMPLATE_TOKENS = 34  # QwenImagePipeline.prompt_template_encode_start_idx: the system turn dropped
MAX_PROMPT_TOKENS = 1024  # QwenImagePipeline.tokenizer_max_length
# Flow-Factory's Qwen-Image LoRA (src/flow_factory/models/qwen_image/qwen_image.py, default_target_modules):
# both streams' attention projections and MLPs.
LORA_TARGETS = (
    "attn.to_k",
    "attn.to_q",
    "attn.to_v",
    "attn.to_out.0",
    "attn.add_q_proj",
    "attn.add_k_proj",
    "attn.add_v_proj",
    "attn.to_add_out",
    "img_mlp.net.0.proj",
    "img_mlp.net.2",
    "txt_mlp.net.0.proj",
    "txt_mlp.net.2",
)


class QwenImageFamily(ModelFamily):
    lora_targets = LORA_TARGETS
    text_encoder_fields = ("text_encoder",)

    def __init__(self, directory: Path, device: torch.device, dtype: torch.dtype, resolution: tuple[int, int]) -> None:
        from diffusers import AutoencoderKLQwenImage, QwenImageTransformer2DModel
        from transformers import AutoTokenizer, Qwen2_5_VLForConditionalGeneration

        self.schedule = CheckpointSchedule.load(directory, "qwen_image")
        self.device = device
        self.encoder_device = device  # where the text encoders run (model.text_encoders)
        transformer = QwenImageTransformer2DModel.from_pretrained(directory / "transformer", torch_dtype=dtype)
        self.transformer = transformer.to(device)
        self.vae = AutoencoderKLQwenImage.from_pretrained(directory / "vae").to(device).eval().requires_grad_(False)
        encoder = Qwen2_5_VLForConditionalGeneration.from_pretrained(directory / "text_encoder")
        self.text_encoder = encoder.to(device).eval().requires_grad_(False)
        self.tokenizer = AutoTokenizer.from_pretrained(directory / "tokenizer")
        scale = 2 ** len(self.vae.config.temperal_downsample)  # the pipeline's vae_scale_factor
        height, width = latent_size(resolution, scale, self.transformer.config.patch_size)
        self.latent_shape = (self.vae.config.z_dim, height, width)
        self.image_tokens = (height // 2) * (width // 2)  # the packed 2 × 2 patches: μ counts them

    @torch.no_grad()
    def encode_prompts(self, prompts: list[str]) -> Conditioning:
        tokens = self.tokenizer(
            [PROMPT_TEMPLATE.format(p) for p in prompts],
            max_length=MAX_PROMPT_TOKENS + TEMPLATE_TOKENS,
            padding=True,
            truncation=True,
            return_tensors="pt",
        )
        return self.encoded_past_template(tokens, TEMPLATE_TOKENS)

    def encoded_past_template(self, inputs: BatchEncoding, template_tokens: int) -> Conditioning:
        """The text encoder's last hidden states of each prompt's attended tokens past its first
        ``template_tokens`` (the pipeline's ``h[mask.bool()][drop_idx:]``), zero-padded to the longest, masked."""
        # Their positions are read here on the host, where the tokenizer made the mask, so the device never waits on
        # a nonzero.
        positions = [m.nonzero().squeeze(1)[template_tokens:] for m in inputs.attention_mask]
        inputs = inputs.to(self.encoder_device)
        out = self.text_encoder(
            input_ids=inputs["input_ids"],
            attention_mask=inputs["attention_mask"],
            pixel_values=inputs.get("pixel_values"),  # an edit prompt's image, read by the vision tower
            image_grid_thw=inputs.get("image_grid_thw"),
            output_hidden_states=True,
        )
        kept = [h.index_select(0, p.to(h.device)) for h, p in zip(out.hidden_states[-1], positions, strict=True)]
        longest = max(len(k) for k in kept)
        hidden = torch.stack([nn.functional.pad(k, (0, 0, 0, longest - len(k))) for k in kept])
        mask = torch.stack([torch.arange(longest, device=hidden.device) < len(k) for k in kept]).long()
        return Conditioning(hidden, mask=mask)

    def forward(self, module: nn.Module, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        batch, channels, height, width = x.shape
        out = module(
            hidden_states=pack(x),
            timestep=sigma.float(),  # the pipeline's t / 1000 in fp32
            encoder_hidden_states=cond.hidden.to(x.dtype),
            encoder_hidden_states_mask=cond.mask,
            img_shapes=[[(1, height // 2, width // 2)]] * batch,
            return_dict=False,
        )[0]
        return unpack(out, channels, height, width)

    def guide(self, v_uncond: torch.Tensor, v_cond: torch.Tensor, cfg_scale: float) -> torch.Tensor:
        """QwenImagePipeline's true CFG: the guided velocity rescaled to the conditional one's norm per packed
        patch."""
        combined = pack(v_uncond + cfg_scale * (v_cond - v_uncond))
        rescaled = combined * (pack(v_cond).norm(dim=-1, keepdim=True) / combined.norm(dim=-1, keepdim=True))
        return unpack(rescaled, *v_cond.shape[1:])

    @torch.no_grad()
    def decode(self, latents: torch.Tensor) -> torch.Tensor:
        images = self.vae.decode(denormalised(latents.unsqueeze(2), self.vae), return_dict=False)[0][:, :, 0]
        return (images.float() / 2 + 0.5).clamp(0, 1)
