"""A tiny Qwen-Image-Edit checkpoint: QwenImageEditPipeline's components built small from configs, written with
``save_pretrained`` as a local folder (``model.family: qwen_image_edit``, ``model.path`` the folder).

The transformer and scheduler config are the tiny Qwen-Image's (Qwen/Qwen-Image-Edit ships Qwen-Image's layouts and
scheduler config); the VAE too, with the class's ``latents_mean``/``latents_std`` (Qwen-Image's). The text encoder
is the real ``Qwen2_5_VLForConditionalGeneration`` with a vision tower that runs: the edit prompt carries the
conditioning image as ``<|vision_start|><|image_pad|><|vision_end|>``, which ``Qwen2VLProcessor``'s call expands to
one pad token per merged 2 × 2 patch of 14-pixel patches, and the encoder puts the vision tower's features there.
The tokenizer reads the edit template as Qwen2's BPE does, so the system turn and the user turn's opening are the 64
tokens the pipeline drops (``prompt_template_encode_start_idx``). The image processor's settings are
Qwen/Qwen-Image-Edit's ``processor/preprocessor_config.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from trainer.models.tiny_qwen_image import (
    CHAT_TOKENS,
    SCHEDULER_CONFIG,
    TRANSFORMER_CONFIG,
    VAE_CONFIG,
    qwen_word_tokenizer,
    text_encoder_config,
)

# QwenImageEditPipeline's prompt_template_encode (diffusers pipelines/qwenimage/pipeline_qwenimage_edit.py).
EDIT_PROMPT_TEMPLATE = (
    "<|im_start|>system\nDescribe the key features of the input image (color, shape, size, texture, objects, "
    "background), then explain how the user's text instruction should alter or modify the image. Generate a new "
    "image that meets the user's requirements while maintaining consistency with the original input where "
    "appropriate.<|im_end|>\n<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>{}<|im_end|>\n"
    "<|im_start|>assistant\n"
)
# QwenImageEditPlusPipeline's (Qwen-Image-Edit-2509/2511, pipeline_qwenimage_edit_plus.py): the same system turn,
# each image announced in the user's text instead.
EDIT_PLUS_PROMPT_TEMPLATE = EDIT_PROMPT_TEMPLATE.replace("<|vision_start|><|image_pad|><|vision_end|>", "")
PICTURE_PROMPT = "Picture 1: <|vision_start|><|image_pad|><|vision_end|>"  # its img_prompt_template, one image
TINY_SIZE = (32, 32)  # height, width: the spec's model.resolution for it
MODEL_INDEX = {
    "_class_name": "QwenImageEditPipeline",
    "processor": ["transformers", "Qwen2VLProcessor"],
    "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
    "text_encoder": ["transformers", "Qwen2_5_VLForConditionalGeneration"],
    "tokenizer": ["transformers", "Qwen2Tokenizer"],
    "transformer": ["diffusers", "QwenImageTransformer2DModel"],
    "vae": ["diffusers", "AutoencoderKLQwenImage"],
}
# The tiny VAE with the class's latents_mean/latents_std, Qwen/Qwen-Image's (not 0 and 1): an image's latents are
# normalised before they meet the transformer, and a test sees whether they were.
EDIT_VAE_CONFIG = {k: v for k, v in VAE_CONFIG.items() if k not in ("latents_mean", "latents_std")}
VISION_TOKENS = {
    "vision_start_token_id": "<|vision_start|>",
    "vision_end_token_id": "<|vision_end|>",
    "image_token_id": "<|image_pad|>",
    "video_token_id": "<|video_pad|>",
}
# Qwen2VLImageProcessor as Qwen/Qwen-Image-Edit configures it: 14-pixel patches merged 2 × 2, two frames a patch.
IMAGE_PROCESSOR_CONFIG = {
    "min_pixels": 3136,
    "max_pixels": 12845056,
    "patch_size": 14,
    "temporal_patch_size": 2,
    "merge_size": 2,
    "image_mean": [0.48145466, 0.4578275, 0.40821073],
    "image_std": [0.26862954, 0.26130258, 0.27577711],
}


def build_tiny_qwen_image_edit(directory: Path, pipeline: str = "QwenImageEditPipeline") -> Path:
    """Components from configs with the built-in seed, written with ``save_pretrained`` as a folder of ``pipeline``
    (QwenImageEditPipeline, or QwenImageEditPlusPipeline: the same components), named in its ``model_index.json``
    (the spec reads the family from it, the family its prompt template)."""
    import torch
    from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel
    from transformers import Qwen2_5_VLForConditionalGeneration, Qwen2VLImageProcessorPil

    from trainer.models.builtin_tiny import BUILD_SEED, vocabulary
    from trainer.models.qwen_vl_processor import QwenImagesProcessor

    torch.manual_seed(BUILD_SEED)
    templates = EDIT_PROMPT_TEMPLATE + PICTURE_PROMPT
    tokenizer = qwen_word_tokenizer(vocabulary(), templates, CHAT_TOKENS + list(VISION_TOKENS.values()))
    token_ids = {field: tokenizer.convert_tokens_to_ids(token) for field, token in VISION_TOKENS.items()}
    QwenImageTransformer2DModel(**TRANSFORMER_CONFIG).save_pretrained(directory / "transformer")
    AutoencoderKLQwenImage(**EDIT_VAE_CONFIG).save_pretrained(directory / "vae")
    FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG).save_pretrained(directory / "scheduler")
    encoder = Qwen2_5_VLForConditionalGeneration(text_encoder_config(len(tokenizer), token_ids))
    encoder.save_pretrained(directory / "text_encoder")
    tokenizer.save_pretrained(directory / "tokenizer")
    image_processor = Qwen2VLImageProcessorPil(**IMAGE_PROCESSOR_CONFIG)
    QwenImagesProcessor(image_processor=image_processor, tokenizer=tokenizer).save_pretrained(directory / "processor")
    (directory / "model_index.json").write_text(json.dumps(MODEL_INDEX | {"_class_name": pipeline}, indent=2))
    return directory
