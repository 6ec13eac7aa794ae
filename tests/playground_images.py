"""What the base model alone draws for a playground's prompts and seeds: the tiny model's own weights (no adapter),
the trainer's eval sampler, one batch per prompt. The playground tests compare a grid's base column with it."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image

from trainer.spec.model import ModelSpec
from trainer.spec.playground_task import SamplerSettings


def pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"), dtype=np.int16)


def base_model_pixels(
    model: ModelSpec, prompts: list[str], seeds: list[int], sampler: SamplerSettings
) -> dict[tuple[int, int], np.ndarray]:
    """(prompt index, seed) → the image's pixels, the model loaded as a full fine-tune in fp32 (no LoRA wrapper)."""
    import torch

    from trainer.models.loading import load_family
    from trainer.rollout import sample_ode
    from trainer.run import to_png
    from trainer.sampling.denoising_step import DenoisingStep
    from trainer.sampling.step_grid import StepGrid

    family = load_family(model.model_copy(update={"finetune": "full", "precision": "fp32"}), torch.device("cpu"))
    grid = StepGrid.build(family.sigmas(sampler.steps, sampler.shift), "flow_grpo", 0.7)
    denoiser = DenoisingStep(family, grid, sampler.guidance_scale)
    drawn = {}
    for p, prompt in enumerate(prompts):
        cond = family.encode_prompts([prompt]).repeat_to(len(seeds))
        uncond = family.encode_prompts([""]).repeat_to(len(seeds)) if sampler.guidance_scale > 1 else None
        images = sample_ode(denoiser, family.transformer, cond, uncond, seeds)
        drawn.update({(p, seed): pixels(to_png(image)) for seed, image in zip(seeds, images, strict=True)})
    return drawn
