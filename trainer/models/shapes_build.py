"""Build ``builtin:shapes`` from scratch: ``python -m trainer.models.shapes_build --out DIR``.

The result is a StableDiffusion3Pipeline folder: a trained ``SD3Transformer2DModel`` and
``AutoencoderKL``, SD3's three text encoders (seeded, random and frozen: the transformer learns to
read them) with a word tokenizer over the captions' words, a ``FlowMatchEulerDiscreteScheduler``
config with SD3's shift of 3.0, and ``SHA256SUMS``. Seeded, on one thread, with deterministic
algorithms: the same command on the same machine and torch version rebuilds it bit for bit.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

import torch

from trainer.models.builtin_shapes import CHECKSUM_FILE, checksum_lines
from trainer.models.builtin_tiny import text_encoder_config
from trainer.models.shapes_dataset import IMAGE_SIZE, vocabulary
from trainer.models.shapes_training import latent_statistics, train_transformer, train_vae
from trainer.models.tiny_t5 import tiny_t5_config
from trainer.models.word_tokenizer import SPECIAL_TOKENS, word_tokenizer

SEED = 20260
VAE_STEPS, VAE_BATCH = 400, 32
TRANSFORMER_STEPS, TRANSFORMER_BATCH = 1500, 64
SCHEDULER_SHIFT = 3.0
LATENT_CHANNELS = 4
LATENT_SIZE = IMAGE_SIZE // 2  # the VAE halves the side once
MAX_TOKENS = 16
CLIP_L_HIDDEN, CLIP_G_HIDDEN, CLIP_PROJECTION, T5_HIDDEN = 16, 8, 16, 32

VAE_CONFIG = {
    "in_channels": 3,
    "out_channels": 3,
    "down_block_types": ["DownEncoderBlock2D"] * 2,
    "up_block_types": ["UpDecoderBlock2D"] * 2,
    "block_out_channels": [16, 32],
    "layers_per_block": 1,
    "latent_channels": LATENT_CHANNELS,
    "norm_num_groups": 8,
    "sample_size": IMAGE_SIZE,
    "use_quant_conv": False,  # SD3's VAE has neither quant conv
    "use_post_quant_conv": False,
    "mid_block_add_attention": False,
}
TRANSFORMER_CONFIG = {
    "sample_size": LATENT_SIZE,
    "patch_size": 2,
    "in_channels": LATENT_CHANNELS,
    "out_channels": LATENT_CHANNELS,
    "num_layers": 4,
    "attention_head_dim": 32,
    "num_attention_heads": 2,
    "joint_attention_dim": T5_HIDDEN,
    "caption_projection_dim": 64,
    "pooled_projection_dim": 2 * CLIP_PROJECTION,
    "pos_embed_max_size": LATENT_SIZE,
}


def save_text_stack(directory: Path) -> None:
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, T5Config, T5EncoderModel

    tokenizer = word_tokenizer(vocabulary(), MAX_TOKENS)
    vocab_size = len(SPECIAL_TOKENS) + len(vocabulary())
    for suffix, hidden in (("", CLIP_L_HIDDEN), ("_2", CLIP_G_HIDDEN)):
        CLIPTextModelWithProjection(CLIPTextConfig(**text_encoder_config(hidden, vocab_size))).save_pretrained(
            directory / f"text_encoder{suffix}"
        )
        tokenizer.save_pretrained(directory / f"tokenizer{suffix}")
    T5EncoderModel(T5Config(**tiny_t5_config(vocab_size, T5_HIDDEN))).save_pretrained(directory / "text_encoder_3")
    tokenizer.save_pretrained(directory / "tokenizer_3")


def save_pipeline_files(directory: Path) -> None:
    """The scheduler config and a model_index.json naming every component, as StableDiffusion3Pipeline saves."""
    import diffusers
    from diffusers import FlowMatchEulerDiscreteScheduler

    FlowMatchEulerDiscreteScheduler(shift=SCHEDULER_SHIFT).save_pretrained(directory / "scheduler")
    index = {
        "_class_name": "StableDiffusion3Pipeline",
        "_diffusers_version": diffusers.__version__,
        "scheduler": ["diffusers", "FlowMatchEulerDiscreteScheduler"],
        "text_encoder": ["transformers", "CLIPTextModelWithProjection"],
        "text_encoder_2": ["transformers", "CLIPTextModelWithProjection"],
        "text_encoder_3": ["transformers", "T5EncoderModel"],
        "tokenizer": ["transformers", "PreTrainedTokenizerFast"],
        "tokenizer_2": ["transformers", "PreTrainedTokenizerFast"],
        "tokenizer_3": ["transformers", "PreTrainedTokenizerFast"],
        "transformer": ["diffusers", "SD3Transformer2DModel"],
        "vae": ["diffusers", "AutoencoderKL"],
    }
    (directory / "model_index.json").write_text(json.dumps(index, indent=2) + "\n")


def print_progress(stage: str, step: int, total: int, loss: float) -> None:
    if step % 50 == 0 or step == total - 1:
        print(f"{stage:<12} step {step + 1:>5}/{total}  loss {loss:.4f}", file=sys.stderr, flush=True)


def build(out: Path, vae_steps: int = VAE_STEPS, transformer_steps: int = TRANSFORMER_STEPS) -> None:
    """Train and save the whole model into ``out`` (replaced if it exists)."""
    from diffusers import AutoencoderKL, SD3Transformer2DModel

    from trainer.models.sd3 import SD3Family

    torch.set_num_threads(1)
    torch.use_deterministic_algorithms(True)
    torch.manual_seed(SEED)
    generator = torch.Generator().manual_seed(SEED)
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    save_text_stack(out)
    vae = AutoencoderKL(**VAE_CONFIG)
    train_vae(vae, vae_steps, VAE_BATCH, generator, print_progress)
    shift, scale = latent_statistics(vae, generator)
    vae.register_to_config(shift_factor=round(shift, 4), scaling_factor=round(scale, 4))
    vae.save_pretrained(out / "vae")
    SD3Transformer2DModel(**TRANSFORMER_CONFIG).save_pretrained(out / "transformer")
    save_pipeline_files(out)
    # Train the transformer as the trainer will load it: through SD3Family, from the saved folder.
    family = SD3Family(out, torch.device("cpu"), torch.float32)
    train_transformer(family, transformer_steps, TRANSFORMER_BATCH, generator, print_progress)
    save_transformer(family.transformer.state_dict(), out)
    (out / CHECKSUM_FILE).write_text(checksum_lines(out))


def save_transformer(weights: dict[str, torch.Tensor], out: Path) -> None:
    """Saved from a model made from the config, so config.json records no load path (the bytes do not
    depend on where the build ran)."""
    from diffusers import SD3Transformer2DModel

    transformer = SD3Transformer2DModel.from_config(TRANSFORMER_CONFIG)
    transformer.load_state_dict(weights)
    transformer.save_pretrained(out / "transformer")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write the model into (replaced)")
    parser.add_argument("--vae-steps", type=int, default=VAE_STEPS)
    parser.add_argument("--transformer-steps", type=int, default=TRANSFORMER_STEPS)
    args = parser.parse_args()
    started = time.perf_counter()
    build(args.out, args.vae_steps, args.transformer_steps)
    print(f"built {args.out} in {time.perf_counter() - started:.0f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
