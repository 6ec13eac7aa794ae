"""The built-in tiny models (one per family), built once from explicit configs and cached on disk.

Nothing is downloaded: the transformer, VAE, text encoders, a word-level tokenizer and the real
checkpoint's scheduler config are created from configs with a fixed seed, written with
``save_pretrained``, and every job then loads them through the same ``from_pretrained`` path a
real checkpoint takes. The SD3 configs are below; FLUX's, Wan's and Qwen-Image's are in ``tiny_flux.py``,
``tiny_wan.py`` and ``tiny_qwen_image.py``.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

from trainer.models.tiny_t5 import tiny_t5_config
from trainer.models.tiny_vae import LATENT_CHANNELS, build_colour_vae
from trainer.models.word_tokenizer import SPECIAL_TOKENS, word_tokenizer
from trainer.prompts import COLORS, OBJECTS

BUILD_SEED = 1234
# Raised whenever a tiny model's layout changes, so a cached older build is rebuilt.
TINY_VERSION = 3
LATENT_SIZE = 8
MAX_TOKENS = 16
# SD3's text stack in miniature: CLIP-L and CLIP-G (penultimate states side by side, 16 + 8 wide,
# zero-padded to T5's 32) and T5; the pooled embedding is both projections side by side.
CLIP_L_HIDDEN = 16
CLIP_G_HIDDEN = 8
CLIP_PROJECTION = 16
T5_HIDDEN = 32
TEXT_HIDDEN = T5_HIDDEN
TEXT_PROJECTION = 2 * CLIP_PROJECTION

TRANSFORMER_CONFIG = {
    "sample_size": LATENT_SIZE,
    "patch_size": 2,
    "in_channels": LATENT_CHANNELS,
    "out_channels": LATENT_CHANNELS,
    "num_layers": 2,
    "attention_head_dim": 16,
    "num_attention_heads": 2,
    "joint_attention_dim": TEXT_HIDDEN,
    "caption_projection_dim": 32,
    "pooled_projection_dim": TEXT_PROJECTION,
    "pos_embed_max_size": LATENT_SIZE,
}

# stabilityai/stable-diffusion-3.5-medium's scheduler/scheduler_config.json (and SD3-medium's).
SCHEDULER_CONFIG = {"num_train_timesteps": 1000, "shift": 3.0}


def text_encoder_config(hidden: int = CLIP_L_HIDDEN, vocab_size: int | None = None) -> dict:
    """A CLIP text encoder with projection (CLIP-L's layout; CLIP-G's differs only in width); the vocabulary is
    the built-in prompt set's unless a model with its own words (builtin:shapes) gives its size."""
    return {
        "vocab_size": vocab_size or len(vocabulary()),
        "hidden_size": hidden,
        "intermediate_size": 4 * hidden,
        "projection_dim": CLIP_PROJECTION,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "max_position_embeddings": MAX_TOKENS,
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 3,
    }


def vocabulary() -> list[str]:
    """Special tokens, the words of the built-in prompt set, and a few common English words."""
    common = ["a", "an", "the", "of", "in", "on", "with", "and", "photo", "picture", "ocean", "sky", "tree"]
    return SPECIAL_TOKENS + sorted(set(COLORS) | set(OBJECTS) | set(common))


def default_cache_dir(family: str = "sd3") -> Path:
    home = os.environ.get("SFUMATO_HOME")
    base = Path(home) if home else Path.home() / ".cache" / "sfumato"
    return base / f"builtin-tiny-{family}"


def ensure_builtin_tiny(cache_dir: Path | None = None, family: str = "sd3") -> Path:
    """Return the directory of the tiny model, building it first if missing.

    A file lock serialises concurrent ranks; the model is written to a temporary folder and
    renamed, so a reader never sees a half-written model. It is built in a fresh interpreter:
    inside an initialised process group transformers saves nothing on a non-zero rank, and the
    first rank to take the lock (or a second node's rank 0) may be any rank.
    """
    target = cache_dir or default_cache_dir(family)
    if is_current(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target.parent / f".{target.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not is_current(target):
            staging = target.parent / f".{target.name}.building-{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            build_in_fresh_process(staging, family)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
    return target


def is_current(directory: Path) -> bool:
    """A complete build of this layout version (an older one is rebuilt)."""
    import json

    index = directory / "model_index.json"
    return index.exists() and json.loads(index.read_text()).get("version") == TINY_VERSION


def build_in_fresh_process(directory: Path, family: str) -> None:
    """`build_tiny` in a child interpreter that has no process group, so every component is saved."""
    code = "import sys; from pathlib import Path; from trainer.models.builtin_tiny import build_tiny; "
    command = code + "build_tiny(Path(sys.argv[1]), sys.argv[2])"
    subprocess.run([sys.executable, "-c", command, str(directory), family], check=True)


def build_tiny(directory: Path, family: str = "sd3") -> None:
    """Create every component of the family's tiny model from its config with a fixed seed and save it."""
    import json

    from trainer.models.tiny_flux import build_tiny_flux
    from trainer.models.tiny_qwen_image import build_tiny_qwen_image
    from trainer.models.tiny_wan import build_tiny_wan

    torch.manual_seed(BUILD_SEED)
    builders = {
        "sd3": build_tiny_sd3,
        "flux": build_tiny_flux,
        "wan": build_tiny_wan,
        "qwen_image": build_tiny_qwen_image,
    }
    builders[family](directory, vocabulary())
    index = {
        "_class_name": f"SfumatoTiny{family.upper()}",
        "family": family,
        "seed": BUILD_SEED,
        "version": TINY_VERSION,
    }
    (directory / "model_index.json").write_text(json.dumps(index, indent=2))


def build_tiny_sd3(directory: Path, words: list[str], transformer: dict | None = None) -> None:
    """StableDiffusion3Pipeline's layout: the transformer (``TRANSFORMER_CONFIG`` unless given), the VAE for
    its latent size, and three text encoders with tokenizers."""
    from diffusers import FlowMatchEulerDiscreteScheduler, SD3Transformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, T5Config, T5EncoderModel

    config = transformer or TRANSFORMER_CONFIG
    SD3Transformer2DModel(**config).save_pretrained(directory / "transformer")
    FlowMatchEulerDiscreteScheduler(**SCHEDULER_CONFIG).save_pretrained(directory / "scheduler")
    build_colour_vae(config["sample_size"]).save_pretrained(directory / "vae")
    tokenizer = word_tokenizer(words, MAX_TOKENS)
    for suffix, hidden in (("", CLIP_L_HIDDEN), ("_2", CLIP_G_HIDDEN)):
        clip = CLIPTextModelWithProjection(CLIPTextConfig(**text_encoder_config(hidden)))
        clip.save_pretrained(directory / f"text_encoder{suffix}")
        tokenizer.save_pretrained(directory / f"tokenizer{suffix}")
    T5EncoderModel(T5Config(**tiny_t5_config(len(tokenizer), T5_HIDDEN))).save_pretrained(directory / "text_encoder_3")
    tokenizer.save_pretrained(directory / "tokenizer_3")
