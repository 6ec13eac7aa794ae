"""The σ grid a job samples on: the checkpoint's own scheduler, called as its diffusers pipeline calls it.

The grid is built by diffusers' scheduler class itself, instantiated from the folder's
``scheduler/scheduler_config.json``, so shift, dynamic (resolution-dependent) shifting and each
scheduler's spacing are the checkpoint's. ``set_timesteps`` is called with the arguments of the
family's pipeline (diffusers ``pipeline_stable_diffusion_3.py``, ``pipeline_flux.py``, ``pipeline_wan.py``):

- SD3: ``set_timesteps(T)``, with μ from the image token count when the config shifts dynamically;
- FLUX and Qwen-Image: ``set_timesteps(sigmas=linspace(1, 1/T, T), mu=calculate_shift(image tokens, ...))``
  (``pipeline_qwenimage.py``);
- Wan: ``set_timesteps(T)`` of UniPCMultistepScheduler with flow sigmas.

``algorithm.shift`` overrides the config's shift (``flow_shift`` for UniPC) and turns dynamic shifting off.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch

from trainer.sampling.scheduler_config import read_scheduler_config
from trainer.spec import SpecError

Pipeline = Literal["sd3", "flux", "wan", "qwen_image"]


@dataclass(frozen=True)
class CheckpointSchedule:
    """A checkpoint's scheduler config and the pipeline whose ``set_timesteps`` call it reproduces."""

    config: dict[str, Any]
    pipeline: Pipeline

    @classmethod
    def load(cls, directory: Path, pipeline: Pipeline) -> CheckpointSchedule:
        try:
            return cls(read_scheduler_config(directory), pipeline)
        except ValueError as error:
            raise SpecError("model.path", str(error)) from None

    def scheduler(self, shift: float | None = None) -> Any:
        """diffusers' scheduler from the config; an explicit shift replaces the config's and dynamic shifting."""
        import diffusers

        config = dict(self.config)
        if shift is not None:
            key = "flow_shift" if config["_class_name"] == "UniPCMultistepScheduler" else "shift"
            config.update({key: shift, "use_dynamic_shifting": False})
        return getattr(diffusers, config["_class_name"]).from_config(config)

    def sigmas(self, steps: int, image_tokens: int, shift: float | None = None) -> torch.Tensor:
        """σ_0 > ... > σ_T = 0 for ``steps`` steps of an image of ``image_tokens`` transformer tokens, in fp64.

        fp64 holds diffusers' fp32 values exactly; coefficients derived from it (g, c) are then exact to the
        step math. Callers index it by step number, never by a float timestep.
        """
        scheduler = self.scheduler(shift)
        config = scheduler.config
        if self.pipeline in ("flux", "qwen_image"):  # QwenImagePipeline calls it as FluxPipeline does
            mu = calculate_shift(
                image_tokens,
                config.get("base_image_seq_len", 256),
                config.get("max_image_seq_len", 4096),
                config.get("base_shift", 0.5),
                config.get("max_shift", 1.15),
            )
            if config.get("use_flow_sigmas"):
                scheduler.set_timesteps(steps, mu=mu)
            else:
                scheduler.set_timesteps(sigmas=np.linspace(1.0, 1 / steps, steps), mu=mu)
        elif self.pipeline == "sd3" and config.get("use_dynamic_shifting"):
            mu = calculate_shift(
                image_tokens,
                config.get("base_image_seq_len", 256),
                config.get("max_image_seq_len", 4096),
                config.get("base_shift", 0.5),
                config.get("max_shift", 1.16),
            )
            scheduler.set_timesteps(steps, mu=mu)
        else:
            scheduler.set_timesteps(steps)
        return scheduler.sigmas.to(torch.float64)


def calculate_shift(image_tokens: int, base_tokens: int, max_tokens: int, base_shift: float, max_shift: float) -> float:
    """μ, linear in the image token count: diffusers' ``calculate_shift`` (pipelines/flux/pipeline_flux.py),
    the same arithmetic in the same order. Importing it from there would load diffusers' pipelines, whose
    image-adapter imports make transformers warn twice in every job's log that torchvision is missing."""
    slope = (max_shift - base_shift) / (max_tokens - base_tokens)
    intercept = base_shift - slope * base_tokens
    return image_tokens * slope + intercept
