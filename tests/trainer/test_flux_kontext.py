"""FLUX.1 Kontext (``model.family: flux_kontext``): its sampling is FluxKontextPipeline's step for step (the row's
image VAE-encoded, packed after the noisy tokens with first id coordinate 1, the output cropped), its σ grid the
pipeline's, Flow-Factory's LoRA targets and algorithms, bf16 and meta-device steps, and two Flow-GRPO steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from tests.executors.test_meta_device_step import META, OneDevicePerOp, meta_job
from tests.trainer.conftest import read_metrics, write_spec
from tests.trainer.test_edit_sets import kontext_spec
from tests.trainer.test_exports import relative, trained
from tests.trainer.test_families import algorithm_spec
from tests.trainer.test_schedule import assert_same_grid
from trainer.executors.registry import make_executor
from trainer.layout import step_batch
from trainer.models.flux import pack, unpack
from trainer.models.flux_kontext import KONTEXT_GUIDANCE, LORA_TARGETS, FluxKontextFamily
from trainer.models.loading import load_family
from trainer.models.tiny_flux_kontext import TINY_SIZE
from trainer.prompts import load_prompts
from trainer.run import run
from trainer.spec import ModelSpec, parse_spec, spec_errors


@pytest.fixture(scope="module")
def family(kontext_dir: Path) -> FluxKontextFamily:
    return FluxKontextFamily(kontext_dir, torch.device("cpu"), torch.float32, TINY_SIZE)


@pytest.fixture(scope="module")
def rows(edit_set_dir: Path) -> list[str]:
    return load_prompts(str(edit_set_dir))


def pipeline(family: FluxKontextFamily) -> Any:
    import diffusers

    return diffusers.FluxKontextPipeline(
        scheduler=family.schedule.scheduler(), vae=family.vae, text_encoder=family.clip,
        tokenizer=family.clip_tokenizer, text_encoder_2=family.t5, tokenizer_2=family.t5_tokenizer,
        transformer=family.transformer,
    )  # fmt: skip


def test_the_folder_is_a_flux_kontext_pipeline_the_spec_tells_from_flux(kontext_dir: Path) -> None:
    import diffusers

    assert isinstance(diffusers.DiffusionPipeline.from_pretrained(kontext_dir), diffusers.FluxKontextPipeline)
    with pytest.raises(ValidationError) as error:
        parse_spec({"model": {"family": "flux", "path": str(kontext_dir)}})
    assert "FluxKontextPipeline (flux_kontext)" in str(error.value)


def pipeline_latents(family: FluxKontextFamily, row: str, steps: int, **inputs: Any) -> tuple[Any, torch.Tensor]:
    """FluxKontextPipeline run on the row's image at the tiny size (no resizing to Kontext's preferred sizes), with
    the row's embeddings: the pipeline and its packed final latents."""
    from PIL import Image

    cond = family.encode_prompts([row])
    pipe = pipeline(family)
    height, width = TINY_SIZE
    with torch.no_grad():
        out = pipe(
            image=Image.open(row.image).convert("RGB"), prompt_embeds=cond.hidden,  # type: ignore[attr-defined]
            pooled_prompt_embeds=cond.pooled, height=height, width=width, max_area=height * width,
            _auto_resize=False, num_inference_steps=steps, output_type="latent", **inputs,
        )  # fmt: skip
    return pipe, out.images


def test_sampling_is_flux_kontext_pipelines_step_for_step(family: FluxKontextFamily, rows: list[str]) -> None:
    """Euler on the family's velocity is the pipeline's loop on the same image, latents and embeddings (its
    distilled guidance at Kontext's 2.5)."""
    steps, cond = 3, family.encode_prompts(rows[:1])
    x = torch.randn(1, *family.latent_shape, generator=torch.Generator().manual_seed(0))
    _, theirs = pipeline_latents(family, rows[0], steps, latents=pack(x), guidance_scale=KONTEXT_GUIDANCE)
    sigmas = family.sigmas(steps).float()
    with torch.no_grad():
        for step in range(steps):
            v = family.velocity(family.transformer, x, sigmas[step : step + 1], cond, None, 1.0)
            x = x + (sigmas[step + 1] - sigmas[step]) * v
    assert torch.allclose(x, unpack(theirs, *family.latent_shape), atol=1e-5)


def test_the_velocity_follows_the_row_s_image(family: FluxKontextFamily, rows: list[str]) -> None:
    cond = family.encode_prompts(rows[:2])  # one instruction, two images
    x = torch.randn(1, *family.latent_shape).expand(2, -1, -1, -1)
    with torch.no_grad():
        v = family.forward(family.transformer, x, torch.tensor([0.5, 0.5]), cond)
    assert v.shape == x.shape and not torch.allclose(v[0], v[1])


def test_the_kontext_grid_is_the_one_its_pipeline_sets(family: FluxKontextFamily, rows: list[str]) -> None:
    pipe, _ = pipeline_latents(family, rows[0], 6)
    assert_same_grid(family.sigmas(6), pipe.scheduler.sigmas)


def test_every_default_lora_target_names_a_module_of_the_transformer(family: FluxKontextFamily) -> None:
    names = [name for name, _ in family.transformer.named_modules()]
    assert all(any(name.endswith(f".{target}") for name in names) for target in LORA_TARGETS)


@pytest.mark.parametrize("algorithm", ["awm", "dgpo"])
def test_an_algorithm_upstream_does_not_train_on_kontext_is_refused_naming_both(
    kontext_dir: Path, edit_set_dir: Path, algorithm: str
) -> None:
    spec = kontext_spec(kontext_dir, str(edit_set_dir))
    with pytest.raises(ValidationError) as error:
        parse_spec({**spec, "algorithm": {"name": algorithm}})
    (problem,) = spec_errors(error.value)
    assert problem["field"] == "algorithm.name"
    assert "'flux_kontext'" in problem["message"] and f"'{algorithm}'" in problem["message"]


def test_under_bf16_kontext_gets_fp32_timesteps_and_its_guidance(kontext_dir: Path, rows: list[str]) -> None:
    family = load_family(
        ModelSpec(family="flux_kontext", path=str(kontext_dir), finetune="full", precision="bf16"), torch.device("cpu")
    )
    seen: list[dict[str, Any]] = []
    family.transformer.register_forward_pre_hook(lambda _m, _a, kwargs: seen.append(kwargs), with_kwargs=True)
    sigma = family.sigmas(10)[1:3].float()
    cond = family.encode_prompts(rows[:2])
    velocity = family.velocity(family.transformer, torch.randn(2, *family.latent_shape), sigma, cond, None, 1.0)
    assert seen[0]["timestep"].dtype == torch.float32 and torch.equal(seen[0]["timestep"], sigma)
    assert seen[0]["guidance"].tolist() == [KONTEXT_GUIDANCE] * 2
    assert not torch.equal(sigma.bfloat16().float(), sigma)  # what rounding to bf16 would have passed
    assert cond.image.dtype == torch.float32 and velocity.dtype == torch.float32  # type: ignore[union-attr]


def test_a_native_kontext_step_on_the_meta_device_mixes_no_devices(
    sfumato_home: Path, kontext_dir: Path, edit_set_dir: Path
) -> None:
    spec = parse_spec(kontext_spec(kontext_dir, str(edit_set_dir), prompts_per_step=2, group_size=2, cfg_scale=2.0))
    job = meta_job(spec, "sharded")
    job.prompts = load_prompts(str(edit_set_dir))
    trainer = make_executor(spec.executor, job)
    batch = step_batch(job.prompts, 1, spec.seed, 2, 2, 0, 1, job.layout)
    with OneDevicePerOp() as check:
        metrics = trainer.train_step(batch).metrics
    assert all(p.device == META for p in job.parameters)
    assert check.mixed == [] and metrics.keys() >= {"loss", "grad_norm"}


def test_kontext_trains_a_diffusion_nft_step_on_an_edit_set(
    tmp_path: Path, kontext_dir: Path, edit_set_dir: Path
) -> None:
    """Upstream's other algorithm on Kontext: the forward process re-noises each row's sample beside its image."""
    spec = algorithm_spec("diffusion_nft", {"family": "flux_kontext", "path": str(kontext_dir)}, steps=1)
    spec["prompts"] = {"source": str(edit_set_dir)}
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    assert [m["grad_norm"] > 0 for m in read_metrics(tmp_path / "out")] == [True]


def test_kontext_trains_two_flow_grpo_steps_on_an_edit_set(
    tmp_path: Path, kontext_dir: Path, edit_set_dir: Path
) -> None:
    spec = kontext_spec(kontext_dir, str(edit_set_dir))
    spec["algorithm"]["total_steps"] = 2
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2] and all(m["grad_norm"] > 0 for m in metrics)


def test_a_kontext_lora_export_loads_into_flux_kontext_pipeline_with_the_trained_velocity(
    tmp_path: Path, kontext_dir: Path, edit_set_dir: Path, rows: list[str]
) -> None:
    import diffusers

    from trainer.export.write import export

    data = kontext_spec(kontext_dir, str(edit_set_dir))
    data["model"] |= {"finetune": "lora", "lora_rank": 4, "lora_alpha": 6.0}
    spec = parse_spec(data)
    family, checkpoint = trained(spec, tmp_path)
    pipe = diffusers.FluxKontextPipeline.from_pretrained(kontext_dir)
    pipe.load_lora_weights(export(spec, checkpoint, "diffusers", tmp_path / "diffusers"))
    cond, x = family.encode_prompts(rows[:2]), torch.randn(2, *family.latent_shape)
    with torch.no_grad():
        theirs = family.forward(pipe.transformer, x, torch.tensor([0.7, 0.3]), cond)
        ours = family.forward(family.transformer, x, torch.tensor([0.7, 0.3]), cond)
    assert relative(theirs, ours) < 1e-5
