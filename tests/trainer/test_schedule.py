"""The σ grid is the checkpoint's own: diffusers' scheduler from scheduler/scheduler_config.json, called as
the family's diffusers pipeline calls ``set_timesteps`` (docs/trainer.md, "The σ grid")."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch
from diffusers import FlowMatchEulerDiscreteScheduler, UniPCMultistepScheduler
from diffusers.pipelines.flux.pipeline_flux import calculate_shift

from trainer.sampling.schedule import CheckpointSchedule
from trainer.spec import SpecError

# The scheduler configs the checkpoints ship (scheduler/scheduler_config.json, keys that differ from the defaults).
SD3_MEDIUM = {"_class_name": "FlowMatchEulerDiscreteScheduler", "num_train_timesteps": 1000, "shift": 3.0}
FLUX_DEV = {
    "_class_name": "FlowMatchEulerDiscreteScheduler",
    "num_train_timesteps": 1000,
    "shift": 3.0,
    "use_dynamic_shifting": True,
    "base_shift": 0.5,
    "max_shift": 1.15,
    "base_image_seq_len": 256,
    "max_image_seq_len": 4096,
}
WAN_T2V = {
    "_class_name": "UniPCMultistepScheduler",
    "num_train_timesteps": 1000,
    "prediction_type": "flow_prediction",
    "use_flow_sigmas": True,
    "flow_shift": 3.0,
    "solver_order": 2,
    "final_sigmas_type": "zero",
}


def assert_same_grid(ours: torch.Tensor, theirs: torch.Tensor) -> None:
    assert ours.dtype == torch.float64 and ours.shape == theirs.shape
    assert torch.allclose(ours, theirs.double(), atol=1e-7, rtol=0)


@pytest.mark.parametrize("steps", [10, 28, 40])
def test_the_sd3_grid_is_diffusers_set_timesteps_with_its_terminal_zero(steps: int) -> None:
    scheduler = FlowMatchEulerDiscreteScheduler.from_config(SD3_MEDIUM)
    scheduler.set_timesteps(steps)  # StableDiffusion3Pipeline: retrieve_timesteps(scheduler, T)
    ours = CheckpointSchedule(SD3_MEDIUM, "sd3").sigmas(steps, image_tokens=4096)
    assert_same_grid(ours, scheduler.sigmas)
    assert ours[0] == 1 and ours[-1] == 0 and 0 < ours[-2] < 0.01  # near-clean before 0, not shift(1/T)


@pytest.mark.parametrize("pixels", [512, 1024])
def test_the_flux_grid_shifts_with_the_image_token_count_as_flux_pipeline_does(pixels: int) -> None:
    steps, tokens = 20, (pixels // 16) ** 2  # VAE 8× and 2 × 2 packing: 1024 and 4096 tokens
    scheduler = FlowMatchEulerDiscreteScheduler.from_config(FLUX_DEV)
    mu = calculate_shift(tokens, 256, 4096, 0.5, 1.15)
    scheduler.set_timesteps(sigmas=np.linspace(1.0, 1 / steps, steps), mu=mu)  # FluxPipeline.__call__
    assert_same_grid(CheckpointSchedule(FLUX_DEV, "flux").sigmas(steps, tokens), scheduler.sigmas)


def test_a_larger_flux_image_samples_on_a_noisier_grid() -> None:
    schedule = CheckpointSchedule(FLUX_DEV, "flux")
    small, large = schedule.sigmas(20, 1024), schedule.sigmas(20, 4096)
    assert (large[1:-1] > small[1:-1]).all()


@pytest.mark.parametrize("steps", [10, 20, 50])
def test_the_wan_grid_is_unipc_flow_sigmas_starting_below_one(steps: int) -> None:
    scheduler = UniPCMultistepScheduler.from_config(WAN_T2V)
    scheduler.set_timesteps(steps)  # WanPipeline.__call__
    ours = CheckpointSchedule(WAN_T2V, "wan").sigmas(steps, image_tokens=32760)
    assert_same_grid(ours, scheduler.sigmas)
    assert ours[0] < 1 and ours[-1] == 0


def test_an_explicit_shift_replaces_the_checkpoints_and_its_dynamic_shifting() -> None:
    static = FlowMatchEulerDiscreteScheduler.from_config({**FLUX_DEV, "shift": 5.0, "use_dynamic_shifting": False})
    static.set_timesteps(sigmas=np.linspace(1.0, 1 / 10, 10))
    assert_same_grid(CheckpointSchedule(FLUX_DEV, "flux").sigmas(10, 1024, shift=5.0), static.sigmas)
    unipc = UniPCMultistepScheduler.from_config({**WAN_T2V, "flow_shift": 5.0})
    unipc.set_timesteps(10)
    assert_same_grid(CheckpointSchedule(WAN_T2V, "wan").sigmas(10, 0, shift=5.0), unipc.sigmas)


@pytest.mark.parametrize("family", ["sd3", "flux", "wan"])
def test_each_tiny_model_samples_on_the_grid_its_diffusers_pipeline_sets(
    tiny_family_dirs: dict[str, Path], family: str
) -> None:
    """The real pipeline, run from the tiny model's own components, is the oracle: its scheduler's σ after
    ``__call__`` is the grid it sampled on (image token count included)."""
    from trainer.models.loading import load_family
    from trainer.spec import ModelSpec

    steps = 6
    ours = load_family(ModelSpec(family=family, finetune="full"), torch.device("cpu"))
    pipe, inputs = pipeline_for(family, ours)
    pipe(**inputs, num_inference_steps=steps, guidance_scale=1.0, output_type="latent")
    assert_same_grid(ours.sigmas(steps), pipe.scheduler.sigmas)


def pipeline_for(family: str, loaded: object) -> tuple[object, dict[str, object]]:
    """The family's diffusers pipeline on the loaded transformer and VAE, fed prompt embeddings directly."""
    import diffusers

    scheduler = loaded.schedule.scheduler()  # type: ignore[attr-defined]
    cond = loaded.encode_prompts(["a red ball"])  # type: ignore[attr-defined]
    parts = {"transformer": loaded.transformer, "vae": loaded.vae, "scheduler": scheduler}  # type: ignore[attr-defined]
    if family == "wan":
        pipe = diffusers.WanPipeline(tokenizer=None, text_encoder=None, **parts)
        return pipe, {"prompt_embeds": cond.hidden, "height": 32, "width": 32, "num_frames": 5}
    if family == "flux":
        pipe = diffusers.FluxPipeline(text_encoder=None, tokenizer=None, text_encoder_2=None, tokenizer_2=None, **parts)
        return pipe, {"prompt_embeds": cond.hidden, "pooled_prompt_embeds": cond.pooled, "height": 32, "width": 32}
    pipe = diffusers.StableDiffusion3Pipeline(
        text_encoder=None, tokenizer=None, text_encoder_2=None, tokenizer_2=None, text_encoder_3=None,
        tokenizer_3=None, **parts,
    )  # fmt: skip
    return pipe, {"prompt_embeds": cond.hidden, "pooled_prompt_embeds": cond.pooled, "height": 32, "width": 32}


def test_a_model_folder_without_a_scheduler_config_is_refused_naming_model_path_and_the_file(tmp_path: Path) -> None:
    with pytest.raises(SpecError) as error:
        CheckpointSchedule.load(tmp_path, "sd3")
    assert error.value.field == "model.path"
    assert str(tmp_path / "scheduler" / "scheduler_config.json") in error.value.message


def test_a_scheduler_config_that_is_not_a_flow_grid_is_refused(tmp_path: Path) -> None:
    (tmp_path / "scheduler").mkdir()
    (tmp_path / "scheduler" / "scheduler_config.json").write_text('{"_class_name": "DDIMScheduler"}')
    with pytest.raises(SpecError) as error:
        CheckpointSchedule.load(tmp_path, "sd3")
    assert error.value.field == "model.path" and "DDIMScheduler" in error.value.message


def test_a_visible_pipeline_folder_without_a_scheduler_config_is_refused_at_submit(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from trainer.spec import parse_spec, spec_errors

    (tmp_path / "model_index.json").write_text('{"_class_name": "StableDiffusion3Pipeline"}')
    with pytest.raises(ValidationError) as error:
        parse_spec({"model": {"family": "sd3", "path": str(tmp_path)}})
    (problem,) = spec_errors(error.value)
    assert problem["field"] == "model.path" and "scheduler/scheduler_config.json" in problem["message"]
