"""Qwen-Image (``model.family: qwen_image``): prompts encoded as QwenImagePipeline encodes them, its sampling
reproduced step for step (packing, masks, true CFG's norm rescale), its σ grid, Flow-Factory's LoRA targets,
training, and the algorithms upstream does not train on it refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch
from pydantic import ValidationError

from tests.trainer.conftest import read_metrics, write_spec
from tests.trainer.test_families import algorithm_spec
from tests.trainer.test_schedule import assert_same_grid
from trainer.models.flux import pack, unpack
from trainer.models.qwen_image import LORA_TARGETS, QwenImageFamily
from trainer.run import run
from trainer.spec import parse_spec, spec_errors
from trainer.spec.model import QWEN_TINY_SIZE

PROMPTS = ["a red ball", "a blue car in the sky with a tree"]


@pytest.fixture(scope="module")
def family(tiny_family_dirs: dict[str, Path]) -> QwenImageFamily:
    return QwenImageFamily(tiny_family_dirs["qwen_image"], torch.device("cpu"), torch.float32, QWEN_TINY_SIZE)


def pipeline(family: QwenImageFamily) -> Any:
    import diffusers

    return diffusers.QwenImagePipeline(
        scheduler=family.schedule.scheduler(), vae=family.vae, text_encoder=family.text_encoder,
        tokenizer=family.tokenizer, transformer=family.transformer,
    )  # fmt: skip


def test_prompts_are_encoded_as_qwen_image_pipeline_encodes_them(family: QwenImageFamily) -> None:
    theirs, their_mask = pipeline(family).encode_prompt(PROMPTS, device=torch.device("cpu"))
    ours = family.encode_prompts(PROMPTS)
    assert torch.equal(ours.hidden, theirs) and torch.equal(ours.mask, their_mask)  # type: ignore[arg-type]
    assert ours.mask[0].sum() == 3 + 5  # type: ignore[index]  # "a red ball" and the turn-closing tail


def test_sampling_with_true_cfg_is_qwen_image_pipelines_step_for_step(family: QwenImageFamily) -> None:
    """Euler on the family's velocity (batched cond and uncond, padded to the longer prompt) is the pipeline's
    loop, whose true CFG rescales the guided velocity to the conditional one's norm."""
    steps, scale = 3, 4.0
    cond, uncond = family.encode_prompts(PROMPTS[1:]), family.encode_prompts([""])
    x = torch.randn(1, *family.latent_shape, generator=torch.Generator().manual_seed(0))
    height, width = QWEN_TINY_SIZE
    with torch.no_grad():
        theirs = pipeline(family)(
            prompt_embeds=cond.hidden, prompt_embeds_mask=cond.mask, negative_prompt_embeds=uncond.hidden,
            negative_prompt_embeds_mask=uncond.mask, true_cfg_scale=scale, latents=pack(x), height=height,
            width=width, num_inference_steps=steps, output_type="latent",
        ).images  # fmt: skip
        sigmas = family.sigmas(steps).float()
        for step in range(steps):
            v = family.velocity(family.transformer, x, sigmas[step : step + 1], cond, uncond, scale)
            x = x + (sigmas[step + 1] - sigmas[step]) * v
    assert torch.allclose(x, unpack(theirs, *family.latent_shape), atol=1e-5)


def test_the_qwen_image_grid_is_the_one_its_pipeline_sets(family: QwenImageFamily) -> None:
    steps = 6
    cond = family.encode_prompts(PROMPTS[:1])
    pipe = pipeline(family)
    height, width = QWEN_TINY_SIZE
    pipe(prompt_embeds=cond.hidden, prompt_embeds_mask=cond.mask, true_cfg_scale=1.0, height=height, width=width,
         num_inference_steps=steps, output_type="latent")  # fmt: skip
    assert_same_grid(family.sigmas(steps), pipe.scheduler.sigmas)
    assert abs(family.sigmas(steps)[-2] - 0.02) < 1e-6  # Qwen-Image's shift_terminal, then 0


def test_a_qwen_image_decodes_one_frame_per_latent(family: QwenImageFamily) -> None:
    assert family.decode(torch.randn(2, *family.latent_shape)).shape == (2, 3, *QWEN_TINY_SIZE)


def test_every_default_lora_target_names_a_module_of_the_transformer(family: QwenImageFamily) -> None:
    names = [name for name, _ in family.transformer.named_modules()]
    assert all(any(name.endswith(f".{target}") for name in names) for target in LORA_TARGETS)


@pytest.mark.parametrize("algorithm", ["awm", "dgpo"])
def test_an_algorithm_upstream_does_not_train_on_qwen_image_is_refused_naming_both(algorithm: str) -> None:
    with pytest.raises(ValidationError) as error:
        parse_spec({"model": {"family": "qwen_image"}, "algorithm": {"name": algorithm}})
    (problem,) = spec_errors(error.value)
    assert problem["field"] == "algorithm.name"
    assert "'qwen_image'" in problem["message"] and f"'{algorithm}'" in problem["message"]


def test_qwen_image_trains_two_flow_grpo_steps_with_true_cfg(tmp_path: Path, tiny_family_dirs: dict[str, Path]) -> None:
    spec = algorithm_spec("flow_grpo", {"family": "qwen_image"}, steps=2)
    spec["algorithm"]["cfg_scale"] = 4.0
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    metrics = read_metrics(tmp_path / "out")
    assert [m["step"] for m in metrics] == [1, 2] and all(m["grad_norm"] > 0 for m in metrics)
