"""The built-in tiny Qwen-Image model: QwenImagePipeline's components, built small from configs.

``QwenImageTransformer2DModel`` on 2 × 2-packed latents, ``AutoencoderKLQwenImage`` (16 latent channels, 8×
in space, as Qwen/Qwen-Image's), and the real text encoder class, ``Qwen2_5_VLForConditionalGeneration``, one
layer wide enough for the transformer's ``joint_attention_dim``. Its tokenizer is word-level but reads the
pipeline's prompt template as Qwen2's BPE does: the chat markers are special tokens and newlines are tokens,
so the template's system turn is 34 tokens, the ``prompt_template_encode_start_idx`` the pipeline drops.
The scheduler config is Qwen/Qwen-Image's ``scheduler/scheduler_config.json`` (the values trainers that
reproduce it in code carry, e.g. ostris/ai-toolkit's Qwen-Image model): dynamic exponential shifting from
0.5 at 256 image tokens to 0.9 at 8192, stretched to a terminal σ of 0.02. Images are 32 × 32 px (4 × 4
latents, 4 packed tokens) unless ``model.resolution`` says otherwise.
"""

from __future__ import annotations

import re
from pathlib import Path

from trainer.models.word_tokenizer import SPECIAL_TOKENS

TEXT_HIDDEN = 32
# QwenImagePipeline's prompt_template_encode (diffusers pipelines/qwenimage/pipeline_qwenimage.py).
PROMPT_TEMPLATE = (
    "<|im_start|>system\nDescribe the image by detailing the color, shape, size, texture, quantity, text, spatial "
    "relationships of the objects and background:<|im_end|>\n<|im_start|>user\n{}<|im_end|>\n<|im_start|>assistant\n"
)
CHAT_TOKENS = ["<|im_start|>", "<|im_end|>"]

TRANSFORMER_CONFIG = {
    "patch_size": 2,
    "in_channels": 64,
    "out_channels": 16,
    "num_layers": 2,
    "attention_head_dim": 16,
    "num_attention_heads": 2,
    "joint_attention_dim": TEXT_HIDDEN,
    "axes_dims_rope": (4, 6, 6),
}

VAE_CONFIG = {
    "base_dim": 8,
    "z_dim": 16,
    "dim_mult": [1, 1, 1, 1],
    "num_res_blocks": 1,
    "temperal_downsample": [False, True, True],
    "latents_mean": [0.0] * 16,
    "latents_std": [1.0] * 16,
}

SCHEDULER_CONFIG = {
    "num_train_timesteps": 1000,
    "shift": 1.0,
    "use_dynamic_shifting": True,
    "base_shift": 0.5,
    "max_shift": 0.9,
    "base_image_seq_len": 256,
    "max_image_seq_len": 8192,
    "shift_terminal": 0.02,
    "time_shift_type": "exponential",
}


# Qwen2's pre-tokenizer keeps an English contraction ('s) whole; newlines and punctuation are tokens of their own.
WORD_PATTERN = r"'s|\n|\w+|[^\w\s]+"


def qwen_word_tokenizer(
    words: list[str], template: str = PROMPT_TEMPLATE, special_tokens: list[str] = CHAT_TOKENS
) -> object:
    """Word-level, lower-cased; ``special_tokens`` (the chat markers) special, no BOS/EOS added (Qwen2's tokenizer
    adds none); the ``template``'s words known."""
    from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    template_words = re.findall(WORD_PATTERN, template.replace("{}", "").lower())
    known = sorted((set(words) | set(template_words)) - set(SPECIAL_TOKENS) - set(special_tokens))
    vocab = {word: index for index, word in enumerate(SPECIAL_TOKENS + special_tokens + known)}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Lowercase()
    tokenizer.pre_tokenizer = pre_tokenizers.Split(Regex(WORD_PATTERN), behavior="removed", invert=True)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=special_tokens,
        model_max_length=1024,
    )


def text_encoder_config(vocab_size: int, vision_token_ids: dict[str, int] | None = None) -> object:
    """A one-layer Qwen2.5-VL, its vision tower one block too (the text path never runs it; an edit model's
    prompt reads its image through it, the ``vision_token_ids`` naming its markers in the tokenizer)."""
    from transformers import Qwen2_5_VLConfig

    text = {
        "vocab_size": vocab_size,
        "hidden_size": TEXT_HIDDEN,
        "intermediate_size": 64,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "max_position_embeddings": 1024,
        "rope_scaling": {"type": "mrope", "mrope_section": [2, 3, 3]},
        "bos_token_id": None,
        "eos_token_id": 3,
        "pad_token_id": 0,
    }
    vision = {
        "depth": 1,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_heads": 2,
        "out_hidden_size": TEXT_HIDDEN,
        "fullatt_block_indexes": [0],
    }
    return Qwen2_5_VLConfig(text_config=text, vision_config=vision, vocab_size=vocab_size, **(vision_token_ids or {}))


def build_tiny_qwen_image(directory: Path, words: list[str]) -> None:
    """Components from configs (the caller seeds torch), saved as a QwenImagePipeline directory."""
    from diffusers import AutoencoderKLQwenImage, FlowMatchEulerDiscreteScheduler, QwenImageTransformer2DModel
    from transformers import Qwen2_5_VLForConditionalGeneration

    tokenizer = qwen_word_tokenizer(words)
    QwenImageTransformer2DModel(**TRANSFORMER_CONFIG).save_pretrained(directory / "transformer")
    AutoencoderKLQwenImage(**VAE_CONFIG).save_pretrained(directory / "vae")
    FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG).save_pretrained(directory / "scheduler")
    Qwen2_5_VLForConditionalGeneration(text_encoder_config(len(tokenizer))).save_pretrained(directory / "text_encoder")
    tokenizer.save_pretrained(directory / "tokenizer")
