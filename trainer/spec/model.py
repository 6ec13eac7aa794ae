"""The ``model`` section: which weights, how they are fine-tuned, and how ranks hold them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from trainer.spec.base import (
    BUILTIN_MODEL_PATH,
    BUILTIN_SHAPES_PATH,
    HUB_ID,
    Section,
    SpecProblems,
    check_local_path,
)

# Wan's pixel sizes: VAE scale × transformer patch in space, VAE scale in time (frames are 4k+1).
WAN_PIXELS_PER_TOKEN = 16
WAN_FRAMES_PER_LATENT = 4

# Options that belong to one model family (the submit form shows them for that family only).
FAMILY_OPTIONS: dict[str, frozenset[str]] = {
    "sd3": frozenset(),
    "flux": frozenset(),
    "wan": frozenset({"height", "width", "num_frames"}),
}


def names_hub_model(path: str) -> bool:
    """Whether a model path is a hub id (`org/name`) that the trainer downloads, not a local folder or builtin.
    diffusers loads an existing directory before it asks a hub, so an `org/name` that exists locally is local."""
    if path.startswith(("builtin:", "/", ".", "~")):
        return False
    return bool(HUB_ID.match(path)) and not Path(path).exists()


# model_index.json's _class_name → family, for the pipelines each family loads.
PIPELINE_FAMILIES = {"StableDiffusion3Pipeline": "sd3", "FluxPipeline": "flux", "WanPipeline": "wan"}


def _check_pipeline_family(value: str, info: ValidationInfo) -> None:
    """A local diffusers directory whose model_index.json names another family's pipeline, or that has no
    usable scheduler config."""
    base = (info.context or {}).get("base_dir")
    path = Path(value).expanduser()
    index = (path if path.is_absolute() or not base else Path(base) / path) / "model_index.json"
    if not index.is_file():
        return
    pipeline = json.loads(index.read_text()).get("_class_name", "")
    family = PIPELINE_FAMILIES.get(pipeline)
    wanted = info.data.get("family")
    if family and wanted and family != wanted:
        raise ValueError(f"model path {value!r} holds a {pipeline} ({family}), not a {wanted} model: set model.family")
    from trainer.sampling.scheduler_config import read_scheduler_config

    read_scheduler_config(index.parent)  # the σ grid comes from it


class ModelSpec(Section):
    family: Literal["sd3", "flux", "wan"] = "sd3"
    path: str = Field(
        BUILTIN_MODEL_PATH,
        description="'builtin:tiny' (random weights), 'builtin:shapes' (draws coloured shapes; sd3), "
        "a local diffusers directory, or a hub id 'org/name'",
    )
    finetune: Literal["full", "lora"] = "lora"
    lora_rank: int | None = Field(None, ge=1, le=1024, description="LoRA rank (lora only; default 4)")
    lora_alpha: float | None = Field(None, gt=0, description="LoRA alpha (lora only; default 2 × rank)")
    lora_targets: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None, max_length=256, description="module names the adapter wraps (lora only; default: attention projections)"
    )
    dtype: Literal["float32", "bfloat16"] = "float32"
    gradient_checkpointing: bool = False
    sharding: Literal["auto", "ddp", "fsdp"] = Field(
        "auto",
        description="how ranks hold the weights: 'ddp' (a full replica each, gradients all-reduced), 'fsdp' "
        "(FSDP2: weights, gradients and optimizer state sharded; full fine-tuning with native, lean_retain or "
        "lean_reweight), 'auto' (fsdp for full fine-tuning on CUDA with those executors, ddp otherwise)",
    )
    height: int | None = Field(None, ge=16, le=4096, description="wan: frame height in pixels (default: the model's)")
    width: int | None = Field(None, ge=16, le=4096, description="wan: frame width in pixels (default: the model's)")
    num_frames: int | None = Field(
        None, ge=1, le=1025, description="wan: frames per video, of the form 4k+1 (default: the model's)"
    )

    @field_validator("path")
    @classmethod
    def _path_exists(cls, value: str, info: ValidationInfo) -> str:
        if value in (BUILTIN_MODEL_PATH, BUILTIN_SHAPES_PATH):
            return value
        if value.startswith("builtin:"):
            allowed = f"{BUILTIN_MODEL_PATH!r}, {BUILTIN_SHAPES_PATH!r}"
            raise ValueError(f"unknown built-in model {value!r}; allowed: {allowed}")
        if names_hub_model(value):
            return value
        checked = check_local_path(value, "model path", info)
        _check_pipeline_family(checked, info)
        return checked

    @model_validator(mode="after")
    def _whole(self) -> ModelSpec:
        """The fine-tuning and video-size rules, all checked: the problems are reported together."""
        problems = SpecProblems("ModelSpec")
        self._lora_fields(problems)
        self._video_size(problems)
        problems.raise_all()
        return self

    def _lora_fields(self, problems: SpecProblems) -> None:
        if self.finetune == "full":
            for name in ("lora_rank", "lora_alpha", "lora_targets"):
                if getattr(self, name) is not None:
                    problems.add(name, "applies only to finetune 'lora', not 'full'")
        else:
            if self.lora_rank is None:
                self.lora_rank = 4
            if self.lora_alpha is None:
                self.lora_alpha = float(2 * self.lora_rank)
            if self.sharding == "fsdp":
                message = "'fsdp' shards full fine-tuning; a LoRA adapter is small and trains under 'ddp' or 'auto'"
                problems.add("sharding", message)

    def _video_size(self, problems: SpecProblems) -> None:
        """Wan's VAE compresses 8× in space and 4× in time and its transformer patches 2×2: WanPipeline's
        sizes. A checkpoint with other factors is checked again against its own configs when it loads."""
        if self.family != "wan":
            for name in sorted(FAMILY_OPTIONS["wan"]):
                if getattr(self, name) is not None:
                    problems.add(name, f"applies only to family 'wan', not {self.family!r}")
            return
        for name in ("height", "width"):
            value = getattr(self, name)
            if value is not None and value % WAN_PIXELS_PER_TOKEN:
                multiple = WAN_PIXELS_PER_TOKEN
                problems.add(name, f"must be a multiple of {multiple} (VAE scale 8 × patch 2); got {value}")
        if self.num_frames is not None and (self.num_frames - 1) % WAN_FRAMES_PER_LATENT:
            problems.add("num_frames", f"must be of the form 4k+1 (1, 5, 9, …, 81); got {self.num_frames}")
