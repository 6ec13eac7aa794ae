"""``model.resolution`` sets every family's latent size and, for FLUX, the σ grid's resolution-dependent shift."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import torch

from trainer.models.flux import FluxFamily
from trainer.models.loading import load_family
from trainer.spec import ModelSpec, SpecError

STEPS = 16


@pytest.fixture(scope="module")
def flux_vae_8x(tiny_family_dirs: dict[str, Path], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tiny FLUX model with a VAE that compresses 8× like FLUX.1's (the tiny one compresses 4×)."""
    from diffusers import AutoencoderKL

    from trainer.models.tiny_vae import vae_config

    directory = tmp_path_factory.mktemp("flux-vae-8x") / "model"
    shutil.copytree(tiny_family_dirs["flux"], directory)
    shutil.rmtree(directory / "vae")
    config = vae_config(8) | {"down_block_types": ("DownEncoderBlock2D",) * 4,
                              "up_block_types": ("UpDecoderBlock2D",) * 4, "block_out_channels": (8,) * 4}  # fmt: skip
    AutoencoderKL(**config).save_pretrained(directory / "vae")
    return directory


def flux_pipeline_sigmas(directory: Path, height: int, width: int) -> torch.Tensor:
    """The σ grid FluxPipeline.__call__ sets for this size: its image token count, calculate_shift, linspace σ."""
    from diffusers import FlowMatchEulerDiscreteScheduler
    from diffusers.pipelines.flux.pipeline_flux import calculate_shift, retrieve_timesteps

    scheduler = FlowMatchEulerDiscreteScheduler.from_pretrained(directory / "scheduler")
    vae_scale_factor = 8
    image_seq_len = (height // vae_scale_factor // 2) * (width // vae_scale_factor // 2)
    config = scheduler.config
    mu = calculate_shift(image_seq_len, config.base_image_seq_len, config.max_image_seq_len, config.base_shift,
                         config.max_shift)  # fmt: skip
    retrieve_timesteps(scheduler, STEPS, "cpu", sigmas=np.linspace(1.0, 1 / STEPS, STEPS), mu=mu)
    return scheduler.sigmas


def test_flux_at_512_px_samples_on_flux_pipelines_512_px_grid(flux_vae_8x: Path) -> None:
    family = FluxFamily(flux_vae_8x, torch.device("cpu"), torch.float32, (512, 512))
    assert family.latent_shape[1:] == (64, 64) and family.image_tokens == 1024
    assert torch.equal(family.sigmas(STEPS).float(), flux_pipeline_sigmas(flux_vae_8x, 512, 512))


def test_flux_shifts_its_grid_with_the_resolution(flux_vae_8x: Path) -> None:
    small = FluxFamily(flux_vae_8x, torch.device("cpu"), torch.float32, (512, 512)).sigmas(STEPS)
    large = FluxFamily(flux_vae_8x, torch.device("cpu"), torch.float32, (1024, 768)).sigmas(STEPS)
    assert torch.equal(large.float(), flux_pipeline_sigmas(flux_vae_8x, 1024, 768))
    assert (large[1:-1] > small[1:-1]).all()  # more tokens, larger μ: more of the steps at high noise


@pytest.mark.parametrize(
    ("family", "latent"), [("sd3", (4, 16, 8)), ("flux", (4, 16, 8)), ("wan", (4, 2, 8, 4))]
)  # the tiny VAEs compress 4× (sd3, flux) and 8× (wan) in space
def test_the_resolution_sets_every_familys_latent_size(
    tiny_family_dirs: dict[str, Path], family: str, latent: tuple[int, ...]
) -> None:
    assert load_family(ModelSpec(family=family, resolution=(64, 32)), torch.device("cpu")).latent_shape == latent


def test_a_resolution_beyond_sd3s_positional_table_is_a_spec_error_naming_the_field(
    tiny_family_dirs: dict[str, Path],
) -> None:
    with pytest.raises(SpecError) as error:
        load_family(ModelSpec(family="sd3", resolution=(128, 32)), torch.device("cpu"))
    assert error.value.field == "model.resolution" and "64 px" in error.value.message
