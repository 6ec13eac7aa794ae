"""Wan 2.2 TI2V-5B under ``model.family: wan``: its 48-channel VAE compressing 16× in space, WanPipeline's
``expand_timesteps`` (one timestep per latent patch token), Flow-Factory's LoRA targets, its pipeline's σ grid,
and every algorithm training on the tiny model."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.trainer.conftest import read_metrics, write_spec
from tests.trainer.test_families import algorithm_spec
from tests.trainer.test_schedule import assert_same_grid
from trainer.algorithms.registry import ALGORITHM_CLASSES
from trainer.models.tiny_wan22 import TINY_SIZE
from trainer.models.wan import WAN22_LORA_TARGETS, WanFamily
from trainer.run import run
from trainer.spec import SpecError

MODEL = {"family": "wan", "resolution": list(TINY_SIZE[:2]), "num_frames": TINY_SIZE[2]}


def test_a_wan22_video_has_48_latent_channels_at_a_sixteenth_of_its_pixels(wan22_dir: Path) -> None:
    family = WanFamily(wan22_dir, torch.device("cpu"), torch.float32, TINY_SIZE)
    assert family.latent_shape == (48, 2, 4, 4) and family.image_tokens == 2 * 2 * 2
    assert family.decode(torch.randn(2, *family.latent_shape)).shape == (2, 5, 3, 64, 64)


def test_a_wan22_side_that_is_not_a_multiple_of_32_is_refused_naming_model_resolution(wan22_dir: Path) -> None:
    with pytest.raises(SpecError) as error:
        WanFamily(wan22_dir, torch.device("cpu"), torch.float32, (48, 64, 5))
    assert error.value.field == "model.resolution" and "32" in error.value.message


def test_wan22_gives_every_patch_token_the_timestep_as_wan_pipeline_does(wan22_dir: Path) -> None:
    family = WanFamily(wan22_dir, torch.device("cpu"), torch.float32, TINY_SIZE)
    x, sigma = torch.randn(2, *family.latent_shape), torch.tensor([0.8, 0.3])
    cond = family.encode_prompts(["a red ball", "a blue car"])
    # WanPipeline.__call__ with expand_timesteps, text-to-video: mask of ones, (mask[0][0][:, ::2, ::2] * t).flatten()
    mask = torch.ones(1, 1, *family.latent_shape[1:])
    tokens = torch.stack([(mask[0][0][:, ::2, ::2] * t).flatten() for t in sigma * 1000])
    with torch.no_grad():
        ours = family.forward(family.transformer, x, sigma, cond)
        theirs = family.transformer(hidden_states=x, timestep=tokens, encoder_hidden_states=cond.hidden)[0]
    assert torch.equal(ours, theirs)


def test_a_wan22_lora_wraps_flow_factorys_attention_and_feed_forward_targets(wan22_dir: Path) -> None:
    from trainer.models.loading import load_family
    from trainer.spec import ModelSpec

    family = load_family(ModelSpec(**MODEL, path=str(wan22_dir)), torch.device("cpu"))
    assert family.lora_targets == WAN22_LORA_TARGETS
    wrapped = {n for n, m in family.transformer.named_modules() if hasattr(m, "lora_A")}
    assert "base_model.model.blocks.0.ffn.net.2" in wrapped and "base_model.model.blocks.0.attn2.to_q" in wrapped


def test_a_wan22_a14b_folder_with_two_experts_is_refused_naming_model_path(tmp_path: Path) -> None:
    (tmp_path / "transformer_2").mkdir()
    with pytest.raises(SpecError) as error:
        WanFamily(tmp_path, torch.device("cpu"), torch.float32, TINY_SIZE)
    assert error.value.field == "model.path" and "transformer_2" in error.value.message


def test_the_wan22_grid_is_the_one_wan_pipeline_sets(wan22_dir: Path) -> None:
    import diffusers

    steps = 6
    family = WanFamily(wan22_dir, torch.device("cpu"), torch.float32, TINY_SIZE)
    pipe = diffusers.WanPipeline(
        tokenizer=None, text_encoder=None, transformer=family.transformer, vae=family.vae,
        scheduler=family.schedule.scheduler(), expand_timesteps=True,
    )  # fmt: skip
    height, width, frames = TINY_SIZE
    embeds = family.encode_prompts(["a red ball"]).hidden
    pipe(prompt_embeds=embeds, height=height, width=width, num_frames=frames, num_inference_steps=steps,
         guidance_scale=1.0, output_type="latent")  # fmt: skip
    assert_same_grid(family.sigmas(steps), pipe.scheduler.sigmas)
    assert family.schedule.config["flow_shift"] == 5.0


@pytest.mark.parametrize("algorithm", list(ALGORITHM_CLASSES))
def test_every_algorithm_trains_two_steps_on_wan22(tmp_path: Path, wan22_dir: Path, algorithm: str) -> None:
    spec = algorithm_spec(algorithm, {**MODEL, "path": str(wan22_dir)}, steps=2)
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2] and all(m["grad_norm"] > 0 for m in metrics)
