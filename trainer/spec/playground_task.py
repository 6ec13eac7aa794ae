"""A playground task: prompts × seeds drawn by a checkpoint and by its base model, with one sampler, side by side.
Torch-free: the server validates a request with `PlaygroundSettings` (422 naming the field) and builds the task.

The limits keep a playground run short (it is a job on a worker, and its grid one image): at most
`MAX_PROMPTS` prompts and `MAX_SEEDS` seeds, so at most 32 rows and 64 images.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from trainer.spec.checkpoint_source import CheckpointSource

MAX_PROMPTS = 8
MAX_SEEDS = 4
MAX_PROMPT_CHARS = 500
MAX_SAMPLER_STEPS = 100

Prompt = Annotated[str, Field(min_length=1, max_length=MAX_PROMPT_CHARS, pattern=r"\S")]
Seed = Annotated[int, Field(ge=0, le=2**31 - 1)]


class SamplerSettings(BaseModel):
    """The deterministic (ODE) sampler the trainer's eval images use: `steps` Euler steps on the checkpoint's σ
    grid (with `shift`), classifier-free guidance at `guidance_scale` against the empty prompt (1 turns it off)."""

    model_config = ConfigDict(extra="forbid")

    steps: int = Field(ge=2, le=MAX_SAMPLER_STEPS, description="denoising steps")
    guidance_scale: float = Field(ge=1.0, le=30.0, description="classifier-free guidance; 1.0 disables it")
    shift: float | None = Field(None, gt=0, le=100.0, description="the σ grid's shift; default: the checkpoint's")


class PlaygroundSettings(BaseModel):
    """What a user asks: prompts, seeds, and the sampler (a setting left out is the job's own)."""

    model_config = ConfigDict(extra="forbid")

    prompts: list[Prompt] = Field(min_length=1, max_length=MAX_PROMPTS, description="1 to 8 prompts")
    seeds: list[Seed] = Field(default=[0], min_length=1, max_length=MAX_SEEDS, description="1 to 4 seeds")
    steps: int | None = Field(None, ge=2, le=MAX_SAMPLER_STEPS, description="default: the job's sampling_steps")
    guidance_scale: float | None = Field(None, ge=1.0, le=30.0, description="default: the job's cfg_scale")
    shift: float | None = Field(None, gt=0, le=100.0, description="default: the job's shift, else the checkpoint's")


class PlaygroundTask(BaseModel):
    """Draw each prompt × seed with the checkpoint's weights and with the base model's (the spec's model without
    the trained weights), and write the grid: rows prompt × seed, columns base | trained."""

    model_config = ConfigDict(extra="forbid")

    kind: Literal["playground"] = "playground"
    source: CheckpointSource
    prompts: list[Prompt] = Field(min_length=1, max_length=MAX_PROMPTS)
    seeds: list[Seed] = Field(min_length=1, max_length=MAX_SEEDS)
    sampler: SamplerSettings
