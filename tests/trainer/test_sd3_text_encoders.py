"""SD3 prompt embeddings come from CLIP-L, CLIP-G and T5 exactly as StableDiffusion3Pipeline builds them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from trainer.models.sd3 import SD3Family
from trainer.spec import SpecError

PROMPTS = ["a red apple", "a blue car on the ocean"]


def pipeline_embeddings(family: SD3Family, prompts: list[str]) -> tuple[torch.Tensor, torch.Tensor]:
    from diffusers import FlowMatchEulerDiscreteScheduler, StableDiffusion3Pipeline

    pipe = StableDiffusion3Pipeline(
        transformer=family.transformer, scheduler=FlowMatchEulerDiscreteScheduler(), vae=family.vae,
        text_encoder=family.clips[0], tokenizer=family.clip_tokenizers[0],
        text_encoder_2=family.clips[1], tokenizer_2=family.clip_tokenizers[1],
        text_encoder_3=family.t5, tokenizer_3=getattr(family, "t5_tokenizer", None),
    )  # fmt: skip
    hidden, _, pooled, _ = pipe.encode_prompt(
        prompts, None, None, device=torch.device("cpu"), do_classifier_free_guidance=False,
        max_sequence_length=family.t5_sequence,
    )  # fmt: skip
    return hidden, pooled


def without_t5(source: Path, target: Path) -> Path:
    target.mkdir()
    for part in source.iterdir():
        if part.name not in ("text_encoder_3", "tokenizer_3"):
            (target / part.name).symlink_to(part)
    return target


def test_three_encoder_embeddings_equal_the_pipelines_and_fit_the_transformer(tiny_model_dir: Path) -> None:
    family = SD3Family(tiny_model_dir, torch.device("cpu"), torch.float32)
    cond = family.encode_prompts(PROMPTS)
    hidden, pooled = pipeline_embeddings(family, PROMPTS)
    assert torch.equal(cond.hidden, hidden) and torch.equal(cond.pooled, pooled)
    config = family.transformer.config
    clip_tokens = family.clip_tokenizers[0].model_max_length
    assert cond.hidden.shape == (2, clip_tokens + family.t5_sequence, config.joint_attention_dim)
    assert cond.pooled.shape == (2, config.pooled_projection_dim)  # type: ignore[union-attr]


def test_without_t5_its_part_is_zeros_as_in_the_pipeline(tiny_model_dir: Path, tmp_path: Path) -> None:
    family = SD3Family(without_t5(tiny_model_dir, tmp_path / "no-t5"), torch.device("cpu"), torch.float32)
    cond = family.encode_prompts(PROMPTS[:1])
    hidden, pooled = pipeline_embeddings(family, PROMPTS[:1])
    assert torch.equal(cond.hidden, hidden) and torch.equal(cond.pooled, pooled)
    clip_tokens = family.clip_tokenizers[0].model_max_length
    assert cond.hidden.shape[1] == clip_tokens + 256 and not cond.hidden[:, clip_tokens:].any()
    x = torch.zeros(1, *family.latent_shape)
    with torch.no_grad():
        assert family.forward(family.transformer, x, torch.tensor([0.5]), cond).shape == x.shape


def test_a_directory_without_clip_g_is_a_spec_error_naming_the_path(tiny_model_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "no-clip-g"
    target.mkdir()
    for part in ("transformer", "vae", "text_encoder", "tokenizer"):
        (target / part).symlink_to(tiny_model_dir / part)
    with pytest.raises(SpecError) as error:
        SD3Family(target, torch.device("cpu"), torch.float32)
    assert error.value.field == "model.path" and "text_encoder_2" in error.value.message
