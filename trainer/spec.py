"""The job spec: the one contract between the platform and the trainer.

Importing this module must never import torch: the server validates specs with it.
Every rule a user can break is checked here, so a job the trainer cannot run is refused
with a message naming the field before anything is stored or allocated.
"""

from __future__ import annotations

import math
import re
from importlib.metadata import entry_points
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

REWARD_ENTRY_POINT_GROUP = "sfumato.rewards"

BUILTIN_MODEL_PATH = "builtin:tiny"
BUILTIN_PROMPT_SOURCES = ("builtin:colors", "builtin:shapes")
BUILTIN_FAMILIES = ("sd3", "flux", "wan")

PIXEL_REWARDS = (
    "brightness",
    "colorfulness",
    "jpeg_compressibility",
    "jpeg_incompressibility",
    "orange_background",
    "prompt_color_match",
)
MODEL_REWARDS = ("clip_score", "pickscore", "hpsv2", "aesthetic")

ALGORITHMS = ("flow_grpo", "flow_grpo_fast", "dance_grpo", "flash_grpo")
EXECUTORS = ("native", "lean_retain", "lean_reweight", "jagg", "digenrl")

# Names the schema knows but the trainer cannot run yet; refused with "not available yet".
UNAVAILABLE_ALGORITHMS: frozenset[str] = frozenset()
UNAVAILABLE_EXECUTORS: frozenset[str] = frozenset()

# Options each executor accepts; any other executor option set for it is refused.
EXECUTOR_OPTIONS: dict[str, frozenset[str]] = {
    "native": frozenset(),
    "lean_retain": frozenset({"max_retained_graphs", "on_memory_guard", "after_first_update"}),
    "lean_reweight": frozenset({"buffer_regime", "kl", "on_adv_clip", "after_first_update"}),
    "jagg": frozenset({"group_width", "jagg_frac", "cosine_warn", "probe_every"}),
    "digenrl": frozenset({"rollout_devices", "max_staleness", "timestep_batch", "trainer_assisted"}),
}

# Options only some algorithms read.
ALGORITHM_OPTIONS: dict[str, frozenset[str]] = {
    "flow_grpo": frozenset(),
    "flow_grpo_fast": frozenset({"window_size", "window_range"}),
    "dance_grpo": frozenset(),
    "flash_grpo": frozenset({"candidate_steps"}),
}

# Wan's pixel sizes: VAE scale × transformer patch in space, VAE scale in time (frames are 4k+1).
WAN_PIXELS_PER_TOKEN = 16
WAN_FRAMES_PER_LATENT = 4

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


class SpecError(ValueError):
    """A spec that cannot run, with the dotted field it concerns."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=False)


def _check_local_path(value: str, field: str, info: ValidationInfo) -> str:
    """A path must exist and, when roots are configured, lie inside one of them."""
    path = Path(value).expanduser()
    roots = (info.context or {}).get("path_roots") if info.context else None
    if not path.is_absolute():
        base = (info.context or {}).get("base_dir")
        path = Path(base) / path if base else path.resolve()
    resolved = path.resolve()
    if roots and not any(resolved.is_relative_to(Path(r).resolve()) for r in roots):
        allowed = ", ".join(str(r) for r in roots)
        raise ValueError(f"{field} {value!r} is outside the allowed roots ({allowed})")
    if not resolved.exists():
        raise ValueError(f"{field} {value!r} does not exist")
    return value


# model_index.json's _class_name → family, for the pipelines each family loads.
PIPELINE_FAMILIES = {"StableDiffusion3Pipeline": "sd3", "FluxPipeline": "flux", "WanPipeline": "wan"}


def _check_pipeline_family(value: str, info: ValidationInfo) -> None:
    """A local diffusers directory whose model_index.json names another family's pipeline, or that has no
    usable scheduler config."""
    import json

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


class ModelSpec(_Section):
    family: Literal["sd3", "flux", "wan"] = "sd3"
    path: str = Field(
        BUILTIN_MODEL_PATH,
        description="'builtin:tiny', a local diffusers directory, or a hub id 'org/name'",
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
        "(FSDP2: weights, gradients and optimizer state sharded; full fine-tuning with the native executor), "
        "'auto' (fsdp for full fine-tuning on CUDA with the native executor, ddp otherwise)",
    )
    height: int | None = Field(None, ge=16, le=4096, description="wan: frame height in pixels (default: the model's)")
    width: int | None = Field(None, ge=16, le=4096, description="wan: frame width in pixels (default: the model's)")
    num_frames: int | None = Field(
        None, ge=1, le=1025, description="wan: frames per video, of the form 4k+1 (default: the model's)"
    )

    @field_validator("path")
    @classmethod
    def _path_exists(cls, value: str, info: ValidationInfo) -> str:
        if value == BUILTIN_MODEL_PATH:
            return value
        if value.startswith("builtin:"):
            raise ValueError(f"unknown built-in model {value!r}; allowed: {BUILTIN_MODEL_PATH!r}")
        # diffusers loads an existing directory before it asks a hub, so 'org/name' that exists
        # locally is a local path and must pass the same root check.
        looks_local = value.startswith(("/", ".", "~")) or not HUB_ID.match(value) or Path(value).exists()
        if looks_local:
            _check_local_path(value, "model path", info)
            _check_pipeline_family(value, info)
        return value

    @model_validator(mode="after")
    def _lora_fields(self) -> ModelSpec:
        if self.finetune == "full":
            for name in ("lora_rank", "lora_alpha", "lora_targets"):
                if getattr(self, name) is not None:
                    raise SpecError(name, "applies only to finetune 'lora', not 'full'")
        else:
            if self.lora_rank is None:
                self.lora_rank = 4
            if self.lora_alpha is None:
                self.lora_alpha = float(2 * self.lora_rank)
            if self.sharding == "fsdp":
                message = "'fsdp' shards full fine-tuning; a LoRA adapter is small and trains under 'ddp' or 'auto'"
                raise SpecError("sharding", message)
        return self

    @model_validator(mode="after")
    def _video_size(self) -> ModelSpec:
        """Wan's VAE compresses 8× in space and 4× in time and its transformer patches 2×2: WanPipeline's
        sizes. A checkpoint with other factors is checked again against its own configs when it loads."""
        if self.family != "wan":
            for name in ("height", "width", "num_frames"):
                if getattr(self, name) is not None:
                    raise SpecError(name, f"applies only to family 'wan', not {self.family!r}")
            return self
        for name in ("height", "width"):
            value = getattr(self, name)
            if value is not None and value % WAN_PIXELS_PER_TOKEN:
                multiple = WAN_PIXELS_PER_TOKEN
                raise SpecError(name, f"must be a multiple of {multiple} (VAE scale 8 × patch 2); got {value}")
        if self.num_frames is not None and (self.num_frames - 1) % WAN_FRAMES_PER_LATENT:
            raise SpecError("num_frames", f"must be of the form 4k+1 (1, 5, 9, …, 81); got {self.num_frames}")
        return self


class AlgorithmSpec(_Section):
    name: Literal["flow_grpo", "flow_grpo_fast", "dance_grpo", "flash_grpo"] = "flow_grpo"
    sampling_steps: int = Field(10, ge=2, le=1000, description="T, denoising steps per rollout")
    train_timesteps: int | None = Field(
        None, ge=1, description="K, trained steps per sample; must be < sampling_steps (default T-1)"
    )
    group_size: int = Field(4, ge=2, le=1024, description="G, samples per prompt")
    prompts_per_step: int = Field(2, ge=1, le=4096, description="prompts per optimizer step")
    total_steps: int = Field(10, ge=1, le=10_000_000, description="optimizer steps")
    learning_rate: float = Field(3e-4, gt=0, le=1.0)
    noise_level: float = Field(0.7, gt=0, le=5.0, description="SDE level: a (flow_grpo), eta (dance_grpo)")
    clip_range: float = Field(1e-4, gt=0, le=1.0)
    kl_beta: float = Field(0.0, ge=0)
    adv_clip: float = Field(5.0, gt=0)
    global_std: bool = True
    cfg_scale: float = Field(1.0, ge=1.0, le=30.0, description="1.0 disables classifier-free guidance")
    shift: float | None = Field(
        None, gt=0, le=100.0, description="schedule shift s; overrides the checkpoint's scheduler config"
    )
    max_grad_norm: float = Field(1.0, gt=0)
    inner_epochs: int = Field(1, ge=1, le=16)
    window_size: int | None = Field(None, ge=1, description="flow_grpo_fast: SDE window length")
    window_range: tuple[int, int] | None = Field(None, description="flow_grpo_fast: [start, end) of window starts")
    candidate_steps: int | None = Field(
        None, ge=1, description="flash_grpo: steps 0..n-1 a prompt's step is drawn from"
    )
    rollout_chunks: int = Field(
        1,
        ge=1,
        le=64,
        description="roll each rank's samples out in this many chunks, scoring a chunk's rewards on a background "
        "thread while the next one samples (trained steps forward in the same chunks)",
    )

    @model_validator(mode="after")
    def _consistent(self) -> AlgorithmSpec:
        if self.name in UNAVAILABLE_ALGORITHMS:
            available = _available(ALGORITHMS, UNAVAILABLE_ALGORITHMS)
            raise SpecError("name", f"{self.name!r} is not available yet; available: {available}")
        for option in set().union(*ALGORITHM_OPTIONS.values()) - ALGORITHM_OPTIONS[self.name]:
            if getattr(self, option) is not None:
                raise SpecError(option, f"does not apply to algorithm {self.name!r}")
        last = self.sampling_steps - 1
        if self.name == "flow_grpo_fast":
            self._window(last)
        if self.name == "flash_grpo":
            self._candidates(last)
        if self.train_timesteps is None:
            self.train_timesteps = last
        if self.train_timesteps >= self.sampling_steps:
            raise SpecError(
                "train_timesteps",
                f"must be less than sampling_steps ({self.sampling_steps}): the near-clean last step is never trained; "
                f"allowed 1..{last}",
            )
        return self

    def _window(self, last: int) -> None:
        """Window of w SDE steps, trained, starting in [r0, r1); it must end before the last step."""
        if self.window_size is None:
            self.window_size = min(self.train_timesteps or 3, 3, last)
        if self.window_size > last:
            raise SpecError("window_size", f"must be at most sampling_steps - 1 = {last}")
        if self.train_timesteps not in (None, self.window_size):
            message = f"flow_grpo_fast trains its window: leave it unset or {self.window_size}"
            raise SpecError("train_timesteps", message)
        self.train_timesteps = self.window_size
        if self.window_range is None:
            self.window_range = (0, max(1, self.sampling_steps // 2 - self.window_size + 1))
        low, high = self.window_range
        if not 0 <= low < high:
            raise SpecError("window_range", "must be [start, end) with 0 <= start < end")
        if high - 1 + self.window_size > last:
            raise SpecError(
                "window_range",
                f"a window starting at {high - 1} would train step {high - 2 + self.window_size}; "
                f"the last trainable step is {last - 1}, so end must be at most {last - self.window_size + 1}",
            )

    def _candidates(self, last: int) -> None:
        """One trained step per prompt, drawn from steps 0..candidate_steps-1."""
        if self.candidate_steps is None:
            self.candidate_steps = max(1, self.sampling_steps // 2)
        if self.candidate_steps > last:
            message = f"must be at most sampling_steps - 1 = {last}: the last step is never trained"
            raise SpecError("candidate_steps", message)
        if self.train_timesteps not in (None, 1):
            raise SpecError("train_timesteps", "flash_grpo trains exactly one step per sample: leave it unset or 1")
        self.train_timesteps = 1


class ExecutorSpec(_Section):
    name: Literal["native", "lean_retain", "lean_reweight", "jagg", "digenrl"] = "native"
    max_retained_graphs: int | None = Field(None, ge=1, description="lean_retain: graphs kept at once before refusing")
    on_memory_guard: Literal["fail", "native", "lean_reweight"] | None = Field(
        None, description="lean_retain: over max_retained_graphs, refuse the spec (fail) or run this schedule instead"
    )
    after_first_update: Literal["native"] | None = Field(
        None, description="lean_retain, lean_reweight: with inner_epochs > 1, native's updates after the first (hybrid)"
    )
    on_adv_clip: Literal["fail", "log", "native_fallback"] | None = Field(
        None, description="lean_reweight, global std: what to do when the advantage clip bites (default fail)"
    )
    kl: Literal["require_zero", "extra_vjp"] | None = Field(
        None, description="lean_reweight: refuse kl_beta > 0, or pay one more VJP per trained step for the KL"
    )
    buffer_regime: Literal["auto", "per_rank", "per_sample", "affine"] | None = Field(
        None, description="lean_reweight: how per-sample gradients are buffered"
    )
    group_width: int | None = Field(None, ge=2, description="jagg: trained steps per routed group")
    jagg_frac: float | None = Field(None, ge=0, le=1, description="jagg: fraction of groups (high noise) aggregated")
    cosine_warn: float | None = Field(
        None, ge=-1, le=1, description="jagg: warn when the audit's or a probe's cosine falls below"
    )
    probe_every: int | None = Field(
        None, ge=1, description="jagg: every this many steps, log each routed group's cosine with its exact gradient"
    )
    rollout_devices: int | None = Field(None, ge=1, description="digenrl: devices in the rollout pool")
    max_staleness: int | None = Field(None, ge=0, le=1, description="digenrl: policy versions a unit may lag")
    timestep_batch: int | None = Field(None, ge=1, description="digenrl: trained steps replayed per batch")
    trainer_assisted: bool | None = Field(None, description="digenrl: trainer generates when it would idle")

    @model_validator(mode="after")
    def _consistent(self) -> ExecutorSpec:
        if self.name in UNAVAILABLE_EXECUTORS:
            available = _available(EXECUTORS, UNAVAILABLE_EXECUTORS)
            raise SpecError("name", f"{self.name!r} is not available yet; available: {available}")
        for option in set().union(*EXECUTOR_OPTIONS.values()) - EXECUTOR_OPTIONS[self.name]:
            if getattr(self, option) is not None:
                raise SpecError(option, f"does not apply to executor {self.name!r}")
        return self


class RewardSpec(_Section):
    name: str = Field(description="a built-in reward or one registered under the 'sfumato.rewards' entry point")
    weight: float = 1.0
    path: str | None = Field(None, description="local weights directory (model-based rewards)")

    @field_validator("name")
    @classmethod
    def _known(cls, value: str) -> str:
        known = known_rewards()
        if value not in known:
            raise ValueError(f"unknown reward {value!r}; allowed: {', '.join(sorted(known))}")
        return value

    @field_validator("path")
    @classmethod
    def _path_exists(cls, value: str | None, info: ValidationInfo) -> str | None:
        return None if value is None else _check_local_path(value, "reward path", info)

    @model_validator(mode="after")
    def _path_needed(self) -> RewardSpec:
        if self.name in MODEL_REWARDS and self.path is None:
            raise SpecError("path", f"reward {self.name!r} loads a model: give the local directory of its weights")
        if self.name in PIXEL_REWARDS and self.path is not None:
            raise SpecError("path", f"reward {self.name!r} computes from pixels and takes no path")
        return self


class PromptsSpec(_Section):
    source: str = Field(
        "builtin:colors",
        description="'builtin:colors', 'builtin:shapes' (the shapes model's captions), or a text file with one "
        "prompt per line",
    )
    eval: list[str] = Field(
        default_factory=lambda: ["a red apple", "a blue ocean"],
        max_length=64,
        description="fixed prompts sampled with fixed seeds every samples.every steps",
    )

    @field_validator("source")
    @classmethod
    def _source_exists(cls, value: str, info: ValidationInfo) -> str:
        if value.startswith("builtin:"):
            if value not in BUILTIN_PROMPT_SOURCES:
                raise ValueError(f"unknown built-in prompt set {value!r}; allowed: {', '.join(BUILTIN_PROMPT_SOURCES)}")
            return value
        return _check_local_path(value, "prompt file", info)

    @field_validator("eval")
    @classmethod
    def _non_empty(cls, value: list[str]) -> list[str]:
        for prompt in value:
            if not prompt.strip() or len(prompt) > 1000:
                raise ValueError("each eval prompt must be 1..1000 characters")
        return value


class PoolSpec(_Section):
    devices: int = Field(ge=1, le=1024, description="devices of this pool, all on one host")
    gpu_model: str | None = Field(None, max_length=128, description="only devices that report this model")


class PoolsSpec(_Section):
    """DigenRL's two pools. The rollout pool's devices are ranks [0, rollout.devices), the trainer's the rest."""

    rollout: PoolSpec
    trainer: PoolSpec


class ResourcesSpec(_Section):
    devices: int = Field(
        1, ge=1, le=1024, description="devices per node; with pools, the sum of the pools' devices (filled in)"
    )
    device_type: Literal["cuda", "cpu"] = "cpu"
    nodes: int = Field(1, ge=1, le=256, description="hosts with `devices` devices each; leave it out with pools")
    gpu_model: str | None = Field(None, max_length=128, description="only hosts whose devices report this model")
    priority: int = Field(0, ge=-100, le=100, description="higher runs first")
    exclusive: bool = Field(
        False,
        description="hold each host whole: start only where no device is in use, and let no other job "
        "start there until this one ends (fair timing for a comparison)",
    )
    pools: PoolsSpec | None = Field(
        None,
        description="digenrl: a rollout and a trainer pool, each on one host with its own gpu_model; the two "
        "pools share a host when one has room for both, else the job spans the two hosts",
    )

    @model_validator(mode="after")
    def _pools_replace_the_flat_form(self) -> ResourcesSpec:
        if self.pools is None:
            return self
        total = self.pools.rollout.devices + self.pools.trainer.devices
        if "devices" in self.model_fields_set and self.devices != total:
            message = f"with pools it is the sum of the pools' devices ({total}); leave it out"
            raise SpecError("devices", message)
        if self.nodes != 1:
            raise SpecError("nodes", "with pools each pool takes one host (two in all at most); leave it out")
        if self.gpu_model is not None:
            raise SpecError("gpu_model", "with pools each pool names its own gpu_model; leave it out here")
        self.devices = total
        return self


class SamplesSpec(_Section):
    every: int = Field(5, ge=1, description="log eval samples every N steps (and at the last step)")
    count: int = Field(2, ge=0, le=64, description="seeds per eval prompt")


class CheckpointSpec(_Section):
    every: int = Field(0, ge=0, description="save every N steps; 0 saves only the final model")


class RetrySpec(_Section):
    max_attempts: int = Field(3, ge=1, le=20, description="attempts for infrastructure failures")


class JobSpec(_Section):
    name: str = Field("job", min_length=1, max_length=200)
    model: ModelSpec = Field(default_factory=ModelSpec)
    algorithm: AlgorithmSpec = Field(default_factory=AlgorithmSpec)
    executor: ExecutorSpec = Field(default_factory=ExecutorSpec)
    reward: list[RewardSpec] = Field(
        default_factory=lambda: [RewardSpec(name="brightness")], min_length=1, max_length=16
    )
    prompts: PromptsSpec = Field(default_factory=PromptsSpec)
    resources: ResourcesSpec = Field(default_factory=ResourcesSpec)
    samples: SamplesSpec = Field(default_factory=SamplesSpec)
    checkpoint: CheckpointSpec = Field(default_factory=CheckpointSpec)
    retry: RetrySpec = Field(default_factory=RetrySpec)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @field_validator("reward")
    @classmethod
    def _unique_rewards(cls, value: list[RewardSpec]) -> list[RewardSpec]:
        names = [r.name for r in value]
        if len(names) != len(set(names)):
            raise ValueError("each reward may appear once")
        return value

    @model_validator(mode="after")
    def _cross_section(self) -> JobSpec:
        if self.model.path == BUILTIN_MODEL_PATH and self.model.family not in BUILTIN_FAMILIES:
            raise SpecError("model.family", f"the built-in tiny model exists for {', '.join(BUILTIN_FAMILIES)}")
        if self.model.sharding == "fsdp":
            if self.world_size < 2:
                raise SpecError("model.sharding", "'fsdp' shards over several ranks and this job has one device")
            if self.executor.name != "native":
                message = f"'fsdp' runs with the native executor only; {self.executor.name} handles gradients itself"
                raise SpecError("model.sharding", message)
        if self.algorithm.rollout_chunks > 1 and self.executor.name != "native":
            message = f"chunked rollouts run with the native executor only; {self.executor.name} rolls out itself"
            raise SpecError("algorithm.rollout_chunks", message)
        return self

    @model_validator(mode="after")
    def _executor_fits(self) -> JobSpec:
        """Executor/algorithm/resources pairs that are not exact or cannot run (executors.md §3.7)."""
        name, algo, executor = self.executor.name, self.algorithm, self.executor
        trained: int = algo.train_timesteps  # type: ignore[assignment]
        if name in ("lean_retain", "lean_reweight"):
            if algo.inner_epochs != 1 and executor.after_first_update != "native":
                message = (
                    f"{name} reuses the rollout graphs: it needs exactly 1, or executor.after_first_update: "
                    "'native' (its graphs for the first update only)"
                )
                raise SpecError("algorithm.inner_epochs", message)
            if algo.group_size % self.world_size:
                message = f"{name} shares each prompt over all {self.world_size} ranks: it must divide by them"
                raise SpecError("algorithm.group_size", message)
        if name == "lean_retain" and executor.max_retained_graphs is not None:
            bound = retained_graph_bound(self)
            if bound > executor.max_retained_graphs and executor.on_memory_guard in (None, "fail"):
                raise SpecError(
                    "executor.max_retained_graphs",
                    f"lean_retain would keep up to {bound} sample-step graphs per rank (local samples × trained "
                    f"steps), over {executor.max_retained_graphs}; raise it, or set executor.on_memory_guard "
                    "to 'native' or 'lean_reweight'",
                )
        if name == "lean_reweight":
            if algo.kl_beta > 0 and executor.kl != "extra_vjp":
                raise SpecError(
                    "algorithm.kl_beta",
                    "lean_reweight scales provisional gradients by the advantage, which the KL term must not be: "
                    "set kl_beta to 0 or executor.kl to 'extra_vjp' (one more VJP per trained step)",
                )
            local = algo.group_size // self.world_size
            if executor.buffer_regime == "per_rank" and local != 1:
                raise SpecError(
                    "executor.buffer_regime",
                    f"'per_rank' needs one sample per prompt per rank; here group_size / ranks = {local}",
                )
        if name == "jagg":
            if algo.name == "flash_grpo":
                raise SpecError("executor.name", "jagg aggregates groups of trained steps; flash_grpo trains one")
            width = executor.group_width or 4
            if trained < width:
                message = f"must be at most the trained steps per sample ({trained}): no full group otherwise"
                raise SpecError("executor.group_width", message)
        if self.resources.pools is not None:
            self._pools_fit_digenrl()
        if name == "digenrl":
            if self.world_size < 2:
                raise SpecError("resources.devices", "digenrl needs at least 2 devices: a rollout and a trainer pool")
            pool = executor.rollout_devices or 1
            if pool >= self.world_size:
                message = f"must leave at least one of the {self.world_size} devices to the trainer pool"
                raise SpecError("executor.rollout_devices", message)
            if algo.inner_epochs != 1:
                raise SpecError("algorithm.inner_epochs", "digenrl trains each unit once: it needs exactly 1")
            trainers = self.world_size - pool
            if algo.prompts_per_step % trainers:
                message = f"digenrl gives each of the {trainers} trainer(s) whole groups: it must divide by them"
                raise SpecError("algorithm.prompts_per_step", message)
        elif (algo.prompts_per_step * algo.group_size) % self.world_size:
            message = (
                f"prompts_per_step × group_size = {algo.prompts_per_step * algo.group_size} samples per step do not "
                f"divide over the {self.world_size} ranks (resources.devices × resources.nodes)"
            )
            raise SpecError("algorithm.prompts_per_step", message)
        return self

    def _pools_fit_digenrl(self) -> None:
        """Only digenrl has pools; its rollout ranks are the rollout pool's devices, placed first."""
        pools, executor = self.resources.pools, self.executor
        assert pools is not None
        if executor.name != "digenrl":
            message = f"only executor 'digenrl' has a rollout and a trainer pool, not {executor.name!r}"
            raise SpecError("resources.pools", message)
        if executor.rollout_devices is None:
            executor.rollout_devices = pools.rollout.devices
        elif executor.rollout_devices != pools.rollout.devices:
            message = f"must equal resources.pools.rollout.devices ({pools.rollout.devices}) or be left out"
            raise SpecError("executor.rollout_devices", message)

    @property
    def world_size(self) -> int:
        return self.resources.devices * self.resources.nodes


def retained_graph_bound(spec: JobSpec) -> int:
    """Sample-step graphs lean_retain keeps per rank until the rewards arrive: each local sample keeps
    one per step it trains (only rows that train at a step forward it with grad)."""
    algo = spec.algorithm
    local = algo.prompts_per_step * algo.group_size // spec.world_size
    trained: int = algo.train_timesteps  # type: ignore[assignment]
    return local * trained


def _available(names: tuple[str, ...], unavailable: frozenset[str]) -> str:
    return ", ".join(n for n in names if n not in unavailable)


def known_rewards() -> set[str]:
    """Built-in rewards plus third-party ones registered as entry points."""
    plugins = {ep.name for ep in entry_points(group=REWARD_ENTRY_POINT_GROUP)}
    return set(PIXEL_REWARDS) | set(MODEL_REWARDS) | plugins


def parse_spec(data: Any, *, path_roots: list[str] | None = None, base_dir: str | None = None) -> JobSpec:
    """Validate raw spec data; raises pydantic.ValidationError naming the field."""
    return JobSpec.model_validate(data, context={"path_roots": path_roots, "base_dir": base_dir})


def spec_errors(exc: Exception) -> list[dict[str, str]]:
    """Flatten a validation failure into [{field, message}] with dotted field names."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return [{"field": "", "message": str(exc)}]
    errors = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        ctx_error = (err.get("ctx") or {}).get("error")
        if isinstance(ctx_error, SpecError):
            errors.append({"field": ".".join([*loc, ctx_error.field]), "message": ctx_error.message})
            continue
        field = ".".join(loc)
        message = err["msg"].removeprefix("Value error, ")
        errors.append({"field": field, "message": message})
    return errors


def json_schema() -> dict[str, Any]:
    return JobSpec.model_json_schema()


# ---- Analytical speed bound (executors.md §4, single-process cost model) -----------------------------------
# Per sample per training step, in units of one forward F; collectives, VAE decode, reward and optimizer are
# excluded. T = sampling_steps, K = train_timesteps, b = backward cost (2 full fine-tuning, 1 LoRA, +1 with
# gradient checkpointing). kl_beta > 0 adds K reference forwards to every executor alike. digenrl is a
# multi-process pipeline the model does not cover: no bound.

JAGG_DEFAULT_WIDTH = 4
JAGG_DEFAULT_FRACTION = 0.6


CostInputs = tuple[str, int, int, int, float, int, float, int]


def _cost_inputs(spec: JobSpec | dict[str, Any]) -> CostInputs | None:
    """(executor, T, K, b, kl_beta, W, jagg_frac, inner epochs) of a parsed spec or of a stored one
    (model_dump)."""
    if not isinstance(spec, JobSpec):
        stored = _stored_cost_inputs(spec)  # a stored spec has every default filled in: no validation needed
        if stored is not None:
            return stored
        try:
            spec = JobSpec.model_validate(spec, context={"path_roots": None})
        except ValueError:
            return None
    algo, model, executor = spec.algorithm, spec.model, spec.executor
    backward = (2 if model.finetune == "full" else 1) + (1 if model.gradient_checkpointing else 0)
    width = executor.group_width or JAGG_DEFAULT_WIDTH
    fraction = JAGG_DEFAULT_FRACTION if executor.jagg_frac is None else executor.jagg_frac
    trained: int = algo.train_timesteps  # type: ignore[assignment]
    return executor.name, algo.sampling_steps, trained, backward, algo.kl_beta, width, fraction, algo.inner_epochs


def _stored_cost_inputs(data: dict[str, Any]) -> CostInputs | None:
    """A stored spec that no longer validates here (its model folder moved, say): read the fields it holds."""
    try:
        algo, model, executor = (data.get(k) or {} for k in ("algorithm", "model", "executor"))
        steps = int(algo.get("sampling_steps", 10))
        trained = algo.get("train_timesteps")
        if trained is None:
            return None
        backward = 2 if model.get("finetune", "lora") == "full" else 1
        backward += 1 if model.get("gradient_checkpointing") else 0
        width = executor.get("group_width") or JAGG_DEFAULT_WIDTH
        fraction = executor.get("jagg_frac")
        fraction = JAGG_DEFAULT_FRACTION if fraction is None else float(fraction)
        kl = float(algo.get("kl_beta") or 0.0)
        epochs = int(algo.get("inner_epochs") or 1)
        return str(executor.get("name", "native")), steps, int(trained), backward, kl, int(width), fraction, epochs
    except (AttributeError, TypeError, ValueError):
        return None


def jagg_backward_passes(trained: int, width: int, fraction: float) -> int:
    """K_b with integer routing: n_J = round(jagg_frac · ⌈K/W⌉) (half up, full groups only) routed groups
    take 2 endpoint backwards each; every other trained step takes its own."""
    routed = min(trained // width, math.floor(fraction * math.ceil(trained / width) + 0.5))
    return trained - routed * (width - 2)


def native_cost(spec: JobSpec | dict[str, Any]) -> float | None:
    """Native's cost C = T + E(1 + b)K for the spec's T, K, b and inner epochs E, whatever its executor."""
    inputs = _cost_inputs(spec)
    if inputs is None:
        return None
    _name, steps, trained, backward, kl, _width, _fraction, epochs = inputs
    return steps + epochs * ((1 + backward) * trained + (trained if kl > 0 else 0))


def analytical_cost(spec: JobSpec | dict[str, Any]) -> float | None:
    """The spec's executor's cost C per sample per step in forwards (executors.md §4); None for digenrl
    (or a spec without the numbers)."""
    inputs = _cost_inputs(spec)
    if inputs is None:
        return None
    name, steps, trained, backward, kl, width, fraction, epochs = inputs
    reference = trained if kl > 0 else 0
    recompute = (1 + backward) * trained + reference  # one native update: re-forward, backward, μ_ref
    if name == "native":
        return steps + epochs * recompute
    if name in ("lean_retain", "lean_reweight"):  # after the first update, the hybrid schedule's native ones
        return steps + backward * trained + reference + (epochs - 1) * recompute
    if name == "jagg":
        return steps + epochs * (trained + backward * jagg_backward_passes(trained, width, fraction) + reference)
    return None


def bound_speedup(spec: JobSpec | dict[str, Any]) -> float | None:
    """The analytical speedup over native on the same spec, native cost / executor cost; None for digenrl."""
    cost, base = analytical_cost(spec), native_cost(spec)
    return base / cost if cost and base else None
