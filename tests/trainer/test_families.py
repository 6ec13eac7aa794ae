"""Every algorithm runs on every tiny family (sd3, flux, wan) with an exactly on-policy first update."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.trainer.conftest import read_metrics, tiny_spec, write_spec
from trainer.algorithms.registry import ALGORITHM_CLASSES
from trainer.models.flux import FluxFamily, pack, unpack
from trainer.models.wan import WanFamily
from trainer.rewards.registry import WeightedReward
from trainer.run import run
from trainer.spec import BUILTIN_FAMILIES, RewardSpec
from trainer.spec.family_algorithms import unsupported_pair
from trainer.spec.forward_family import GRPO_ONLY, family_of

SDE_LEVEL = {"dance_grpo": 0.3}


# MixGRPO's window must fit T - 2 = 2 of these 4 steps.
WINDOW_IN_4_STEPS = {"mix_grpo": {"window_size": 2}, "mix_grpo_flash": {"window_size": 2}}


# Every family × algorithm pair upstream trains (trainer/spec/family_algorithms.py).
TRAINED_PAIRS = [(f, a) for a in ALGORITHM_CLASSES for f in BUILTIN_FAMILIES if unsupported_pair(f, a) is None]


@pytest.mark.parametrize(("family", "algorithm"), TRAINED_PAIRS, ids=[f"{a}-{f}" for f, a in TRAINED_PAIRS])
def test_every_algorithm_trains_one_step_on_every_family(
    tmp_path: Path, tiny_family_dirs: dict[str, Path], algorithm: str, family: str
) -> None:
    spec = algorithm_spec(algorithm, {"family": family}, steps=1)
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    (metrics,) = read_metrics(tmp_path / "out")
    assert metrics["grad_norm"] > 0
    if family_of(algorithm) == "grpo":  # the forward family trains no trajectory ratio
        assert metrics["ratio/max_abs_dev"] == 0.0


def algorithm_spec(algorithm: str, model: dict[str, Any], steps: int) -> dict[str, Any]:
    """The tiny example spec running ``algorithm`` for ``steps`` steps of 4 sampling steps on ``model``."""
    fields = {"name": algorithm, "total_steps": steps, "sampling_steps": 4, **WINDOW_IN_4_STEPS.get(algorithm, {})}
    if family_of(algorithm) == "grpo":
        fields["noise_level"] = SDE_LEVEL.get(algorithm, 0.7)
    spec = tiny_spec(model=model, algorithm=fields, samples={"count": 0}, checkpoint={"every": 0})
    if family_of(algorithm) == "forward":  # the example's GRPO options would be refused
        spec["algorithm"] = {k: v for k, v in spec["algorithm"].items() if k not in (*GRPO_ONLY, "clip_range")}
    return spec


def test_flux_packing_matches_the_pipeline_and_round_trips() -> None:
    from diffusers import FluxPipeline

    x = torch.randn(2, 4, 8, 8)
    assert torch.equal(pack(x), FluxPipeline._pack_latents(x, 2, 4, 8, 8))
    assert torch.equal(unpack(pack(x), 4, 8, 8), x)


def test_flux_velocity_has_the_latent_shape_and_follows_the_prompt(tiny_family_dirs: dict[str, Path]) -> None:
    family = FluxFamily(tiny_family_dirs["flux"], torch.device("cpu"), torch.float32)
    cond = family.encode_prompts(["a red apple", "a blue car"])
    x = torch.randn(1, *family.latent_shape).expand(2, -1, -1, -1)
    with torch.no_grad():
        v = family.forward(family.transformer, x, torch.tensor([0.5, 0.5]), cond)
    assert v.shape == x.shape and not torch.allclose(v[0], v[1])


def test_wan_videos_have_the_specs_size_and_rewards_average_their_frames(tiny_family_dirs: dict[str, Path]) -> None:
    family = WanFamily(tiny_family_dirs["wan"], torch.device("cpu"), torch.float32, (48, 32, 9))
    assert family.latent_shape == (4, 3, 6, 4)
    video = family.decode(torch.randn(2, *family.latent_shape))
    assert video.shape == (2, 9, 3, 48, 32)
    total, _ = WeightedReward([RewardSpec(name="brightness")], torch.device("cpu"))(video, ["a", "b"])
    assert torch.allclose(total, video.mean(dim=(1, 2, 3, 4)))


@pytest.mark.parametrize(
    ("size", "field"),
    [((40, 32, 5), "model.resolution"), ((32, 24, 5), "model.resolution"), ((32, 32, 6), "model.num_frames")],
)
def test_a_wan_size_the_checkpoint_cannot_take_is_a_spec_error_naming_the_field(
    tiny_family_dirs: dict[str, Path], size: tuple[int, int, int], field: str
) -> None:
    from trainer.spec import SpecError

    with pytest.raises(SpecError) as error:
        WanFamily(tiny_family_dirs["wan"], torch.device("cpu"), torch.float32, size)
    assert error.value.field == field


def test_a_directory_of_another_familys_pipeline_is_a_spec_error_naming_the_path(tmp_path: Path) -> None:
    from pydantic import ValidationError

    from trainer.spec import parse_spec, spec_errors

    (tmp_path / "model_index.json").write_text('{"_class_name": "StableDiffusion3Pipeline"}')
    (tmp_path / "scheduler").mkdir()
    (tmp_path / "scheduler" / "scheduler_config.json").write_text('{"_class_name": "FlowMatchEulerDiscreteScheduler"}')
    parse_spec({"model": {"family": "sd3", "path": str(tmp_path)}})
    with pytest.raises(ValidationError) as error:
        parse_spec({"model": {"family": "flux", "path": str(tmp_path)}})
    (problem,) = spec_errors(error.value)
    assert problem["field"] == "model.path" and "set model.family" in problem["message"]


def test_wan_takes_the_specs_size_else_the_tiny_models_or_the_pipelines() -> None:
    from trainer.models.loading import video_size
    from trainer.models.wan import PIPELINE_SIZE
    from trainer.spec import ModelSpec

    assert video_size(ModelSpec(family="wan", num_frames=9, resolution=(64, 32))) == (64, 32, 9)
    assert video_size(ModelSpec(family="wan", path="Wan-AI/Wan2.1-T2V-1.3B-Diffusers")) == PIPELINE_SIZE
