"""The ``model`` section: which weights, how they are fine-tuned, and how ranks hold them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationInfo, field_validator, model_validator

from trainer.spec.base import (
    BUILTIN_MODEL_PATH,
    BUILTIN_SHAPES_PATH,
    HUB_ID,
    Section,
    SpecProblems,
    check_local_path,
)

Precision = Literal["bf16", "fp16", "fp32"]
# model.dtype's values, read from specs stored before model.precision replaced it.
LEGACY_DTYPES = {"float32": "fp32", "bfloat16": "bf16"}
# fp16's range (up to 65504) is too narrow for the activations of these families' released checkpoints,
# which their pipelines run in bf16.
FP16_FAMILIES = ("sd3",)

# Pixels per transformer token side, every family's: VAE scale 8 × patch 2 (FLUX: its 2 × 2 packing). A
# checkpoint with other factors is checked again against its own configs when it loads.
PIXELS_PER_TOKEN = 16
# The largest side each family's released checkpoints take: SD3's positional table (pos_embed_max_size 192
# patches), FLUX.1's 0.1-2 megapixel range, Wan 2.1's 720p (1280 × 720), Qwen-Image's aspect sizes (up to
# 1664 × 928; FLUX's 2048 bound).
MAX_RESOLUTION = {
    "sd3": 3072,
    "flux": 2048,
    "flux_kontext": 2048,
    "wan": 1280,
    "wan_i2v": 1280,
    "qwen_image": 2048,
    "qwen_image_edit": 2048,
}
# Wan's frames: VAE scale 4 in time, so frames are 4k+1.
WAN_FRAMES_PER_LATENT = 4
VIDEO_FAMILIES = ("wan", "wan_i2v")  # model.num_frames is theirs
# (height, width, frames) a Wan video has when the spec leaves them out: the built-in tiny model's, else
# WanPipeline's defaults.
WAN_TINY_SIZE = (32, 32, 5)
WAN_PIPELINE_SIZE = (480, 832, 81)
# (height, width) of a Qwen-Image when the spec leaves it out: the built-in tiny model's, else QwenImagePipeline's.
QWEN_TINY_SIZE = (32, 32)  # trainer/models/tiny_qwen_image.py builds it for this size
QWEN_PIPELINE_SIZE = (1024, 1024)

# The families whose pipelines edit or animate a conditioning image: their prompts.source is an edit set
# (trainer/spec/edit_set.py), every row an instruction with its image; a text-only family refuses one.
IMAGE_FAMILIES = frozenset({"flux_kontext", "qwen_image_edit", "wan_i2v"})

# Options that belong to one model family (the submit form shows them for that family only).
FAMILY_OPTIONS: dict[str, frozenset[str]] = {
    "sd3": frozenset(),
    "flux": frozenset(),
    "flux_kontext": frozenset(),
    "wan": frozenset({"num_frames"}),
    "wan_i2v": frozenset({"num_frames"}),
    "qwen_image": frozenset(),
    "qwen_image_edit": frozenset(),
}


def names_hub_model(path: str) -> bool:
    """Whether a model path is a hub id (`org/name`) that the trainer downloads, not a local folder or builtin.
    diffusers loads an existing directory before it asks a hub, so an `org/name` that exists locally is local."""
    if path.startswith(("builtin:", "/", ".", "~")):
        return False
    return bool(HUB_ID.match(path)) and not Path(path).exists()


# model_index.json's _class_name → family, for the pipelines each family loads.
PIPELINE_FAMILIES = {
    "StableDiffusion3Pipeline": "sd3",
    "FluxPipeline": "flux",
    "FluxKontextPipeline": "flux_kontext",
    "WanPipeline": "wan",
    "WanImageToVideoPipeline": "wan_i2v",
    "QwenImagePipeline": "qwen_image",
    "QwenImageEditPipeline": "qwen_image_edit",
    "QwenImageEditPlusPipeline": "qwen_image_edit",  # Qwen-Image-Edit-2509 and -2511
}


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
    family: Literal["sd3", "flux", "flux_kontext", "wan", "wan_i2v", "qwen_image", "qwen_image_edit"] = Field(
        "sd3",
        description="the checkpoint's pipeline: 'sd3' (SD3, SD3.5 Medium and Large), 'flux' (FLUX.1), 'wan' (Wan 2.1 "
        "text-to-video, Wan 2.2 TI2V-5B), 'qwen_image' (Qwen-Image), 'flux_kontext' (FLUX.1 Kontext: edits each "
        "row's image of an edit set), 'qwen_image_edit' (Qwen-Image-Edit: the same), 'wan_i2v' (Wan 2.1 "
        "image-to-video: animates each row's image)",
    )
    path: str = Field(
        BUILTIN_MODEL_PATH,
        description="'builtin:tiny' (random weights), 'builtin:shapes' (draws coloured shapes; sd3), "
        "a local diffusers directory, or a hub id 'org/name'",
    )
    finetune: Literal["full", "lora"] = "lora"
    lora_rank: int | None = Field(None, ge=1, le=1024, description="LoRA rank (lora only; default 4)")
    lora_alpha: float | None = Field(None, gt=0, description="LoRA alpha (lora only; default 2 × rank)")
    lora_targets: list[Annotated[str, Field(min_length=1, max_length=200)]] | None = Field(
        None,
        max_length=256,
        description="module names the adapter wraps (lora only; default: the family's, as upstream recipes target "
        "it: docs/trainer.md)",
    )
    precision: Precision = Field(
        "fp32",
        description="compute precision: weights and optimizer state stay fp32 (a LoRA's frozen base weights are "
        "kept in this precision), the transformer runs under autocast in it (FSDP: its mixed-precision policy, "
        "gradients reduced in fp32); 'fp16' for family sd3 with executor native only (docs/trainer.md)",
    )
    text_encoders: Literal["gpu", "cpu", "free"] = Field(
        "gpu",
        description="where the frozen text encoders stay: 'gpu' on the job's device, prompts encoded as they are "
        "met and cached there (Flow-GRPO's trainers); 'cpu' the prompt set encoded once on the device, kept in host "
        "memory, then the encoders moved to the CPU; 'free' the same, then the encoders dropped (DanceGRPO's "
        "pre-encoded embeddings): a prompt set must be cacheable whole (docs/trainer.md)",
    )
    reference: Literal["device", "cpu"] = Field(
        "device",
        description="where full fine-tuning's frozen KL reference stays (one rank or DDP): 'device' a copy on the "
        "job's device; 'cpu' in host memory (page-locked on CUDA), swapped into the policy's weights for each "
        "reference forward (Flow-Factory's ref_param_device). Under LoRA (the base with the adapter disabled) "
        "and FSDP (sharded like the policy) there is no copy to move: 'cpu' is refused (docs/memory-and-timing.md)",
    )
    gradient_checkpointing: bool = False
    sharding: Literal["auto", "ddp", "fsdp"] = Field(
        "auto",
        description="how ranks hold the weights: 'ddp' (a full replica each, gradients all-reduced), 'fsdp' "
        "(FSDP2: weights, gradients and optimizer state sharded; full fine-tuning with native, lean_retain, "
        "lean_reweight, jagg, jagg_retain or jagg_reweight), 'auto' (fsdp for full fine-tuning on CUDA with those "
        "executors, ddp otherwise)",
    )
    resolution: tuple[Annotated[int, Field(ge=16)], Annotated[int, Field(ge=16)]] | None = Field(
        None,
        description="[height, width] in pixels, multiples of 16 up to the family's maximum (sd3 3072, flux 2048, "
        "wan 1280, qwen_image 2048): the latent size and, for flux and qwen_image, the σ grid's shift μ "
        "(default: the model's own size)",
    )
    num_frames: int | None = Field(
        None, ge=1, le=1025, description="wan, wan_i2v: frames per video, of the form 4k+1 (default: the model's)"
    )

    @model_validator(mode="before")
    @classmethod
    def _legacy_fields(cls, data: Any) -> Any:
        """A spec stored before precision and resolution: ``dtype`` becomes the precision, Wan's ``height`` and
        ``width`` the resolution (a side left out is the model's default). Other families never took them."""
        if not isinstance(data, dict):
            return data
        data = dict(data)
        dtype = data.pop("dtype", None)
        if dtype is not None and "precision" not in data:
            data["precision"] = LEGACY_DTYPES.get(dtype, dtype)
        for side in ("height", "width"):
            if side in data and data[side] is None:
                del data[side]  # every stored spec recorded them, null unless the family was wan
        if data.get("family") != "wan" or not {"height", "width"} & data.keys():
            return data
        height, width = data.pop("height", None), data.pop("width", None)
        if data.get("resolution") is None:
            default = WAN_TINY_SIZE if data.get("path", BUILTIN_MODEL_PATH) == BUILTIN_MODEL_PATH else WAN_PIPELINE_SIZE
            data["resolution"] = (height or default[0], width or default[1])
        return data

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
        self._resolution(problems)
        self._video_frames(problems)
        if self.precision == "fp16" and self.family not in FP16_FAMILIES:
            message = (
                f"{self.family} checkpoints are released and run in bf16: their activations exceed fp16's range; "
                f"fp16 runs family {', '.join(FP16_FAMILIES)}; allowed here: bf16, fp32"
            )
            problems.add("precision", message)
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

    def _resolution(self, problems: SpecProblems) -> None:
        """Every family's latent is its pixels / VAE scale, patched 2 × 2: a side must be a multiple of 16."""
        if self.resolution is None:
            return
        maximum = MAX_RESOLUTION[self.family]
        for side, value in zip(("height", "width"), self.resolution, strict=True):
            if value % PIXELS_PER_TOKEN or value > maximum:
                problems.add(
                    "resolution",
                    f"{side} {value} must be a multiple of {PIXELS_PER_TOKEN} (VAE scale 8 × patch 2) up to "
                    f"{maximum} for family {self.family!r}: allowed 16, 32, …, {maximum}",
                )

    def _video_frames(self, problems: SpecProblems) -> None:
        """Wan's VAE compresses 4× in time: WanPipeline's and WanImageToVideoPipeline's frames are 4k+1."""
        if self.family not in VIDEO_FAMILIES:
            if self.num_frames is not None:
                message = f"applies only to the video families {', '.join(VIDEO_FAMILIES)}, not {self.family!r}"
                problems.add("num_frames", message)
            return
        if self.num_frames is not None and (self.num_frames - 1) % WAN_FRAMES_PER_LATENT:
            problems.add("num_frames", f"must be of the form 4k+1 (1, 5, 9, …, 81); got {self.num_frames}")
