"""Resolve a spec's model path, load its family, and make the right weights trainable."""

from __future__ import annotations

from pathlib import Path

import torch

from trainer.models.base import ModelFamily
from trainer.models.builtin_shapes import ensure_builtin_shapes
from trainer.models.builtin_tiny import ensure_builtin_tiny
from trainer.models.hub_download import download_model
from trainer.spec import BUILTIN_MODEL_PATH, BUILTIN_SHAPES_PATH, ModelSpec
from trainer.spec.model import QWEN_PIPELINE_SIZE, QWEN_TINY_SIZE, WAN_PIPELINE_SIZE, WAN_TINY_SIZE

PRECISIONS = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def model_directory(spec: ModelSpec) -> Path:
    if spec.path == BUILTIN_MODEL_PATH:
        return ensure_builtin_tiny(family=spec.family)
    if spec.path == BUILTIN_SHAPES_PATH:
        return ensure_builtin_shapes()
    local = Path(spec.path).expanduser()
    if local.exists():
        return local
    return download_model(spec.path)


def load_family(spec: ModelSpec, device: torch.device) -> ModelFamily:
    """The family at ``spec.resolution``. Full fine-tuning loads the transformer in fp32, the master weights
    AdamW updates; under LoRA the base weights never change and are held in the compute precision, the
    adapter in fp32 (``prepare_finetune``). Either way the transformer computes in ``model.precision``."""
    directory = model_directory(spec)
    compute = PRECISIONS[spec.precision]
    weights = torch.float32 if spec.finetune == "full" else compute
    family: ModelFamily
    if spec.family == "sd3":
        from trainer.models.sd3 import SD3Family

        family = SD3Family(directory, device, weights, spec.resolution)
    elif spec.family == "flux":
        from trainer.models.flux import FluxFamily

        family = FluxFamily(directory, device, weights, spec.resolution)
    elif spec.family == "flux_kontext":
        from trainer.models.flux_kontext import FluxKontextFamily

        family = FluxKontextFamily(directory, device, weights, spec.resolution)
    elif spec.family == "qwen_image":
        from trainer.models.qwen_image import QwenImageFamily

        family = QwenImageFamily(directory, device, weights, image_size(spec))
    elif spec.family == "qwen_image_edit":
        from trainer.models.qwen_image_edit import QwenImageEditFamily

        family = QwenImageEditFamily(directory, device, weights, image_size(spec))
    elif spec.family == "wan_i2v":
        from trainer.models.wan_i2v import WanI2VFamily

        family = WanI2VFamily(directory, device, weights, video_size(spec))
    else:
        from trainer.models.wan import WanFamily

        family = WanFamily(directory, device, weights, video_size(spec))
    family.compute_dtype = compute
    family.use_compute_precision_vae()
    prepare_finetune(family, spec)
    return family


def image_size(spec: ModelSpec) -> tuple[int, int]:
    """Qwen-Image's and Qwen-Image-Edit's (height, width): the spec's, else the built-in tiny model's or their
    pipelines' default (``default_sample_size`` 128 × VAE scale 8)."""
    if spec.resolution is not None:
        return spec.resolution
    return QWEN_TINY_SIZE if spec.path == BUILTIN_MODEL_PATH else QWEN_PIPELINE_SIZE


def video_size(spec: ModelSpec) -> tuple[int, int, int]:
    """(height, width, frames): the spec's, else the built-in tiny model's or WanPipeline's defaults (also
    WanImageToVideoPipeline's)."""
    height, width, frames = WAN_TINY_SIZE if spec.path == BUILTIN_MODEL_PATH else WAN_PIPELINE_SIZE
    if spec.resolution is not None:
        height, width = spec.resolution
    return height, width, spec.num_frames or frames


def prepare_finetune(family: ModelFamily, spec: ModelSpec) -> None:
    """LoRA: wrap the transformer with a PEFT adapter (B = 0, so it starts as the base model).
    Full: every transformer weight trains. The frozen encoders never train."""
    transformer = family.transformer
    if spec.gradient_checkpointing and hasattr(transformer, "enable_gradient_checkpointing"):
        transformer.enable_gradient_checkpointing()
    if spec.finetune == "full":
        transformer.requires_grad_(True)
        return
    from peft import LoraConfig, get_peft_model

    config = LoraConfig(
        r=spec.lora_rank,
        lora_alpha=spec.lora_alpha,
        target_modules=list(spec.lora_targets or family.lora_targets),
        lora_dropout=0.0,
        init_lora_weights=True,
    )
    family.transformer = get_peft_model(transformer, config)
    for param in family.transformer.parameters():
        if param.requires_grad:
            param.data = param.data.float()
