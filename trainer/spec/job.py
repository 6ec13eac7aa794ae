"""The whole job spec and the rules that join its sections (executor × algorithm × resources)."""

from __future__ import annotations

from typing import Any, get_args

from pydantic import Field, ValidationInfo, field_validator, model_validator

from trainer.spec.algorithm import AlgorithmSpec
from trainer.spec.base import (
    BUILTIN_FAMILIES,
    BUILTIN_MODEL_PATH,
    BUILTIN_SHAPES_PATH,
    Section,
    SpecError,
    SpecProblems,
    is_stored,
)
from trainer.spec.edit_set import source_problem
from trainer.spec.executor import (
    EXECUTORS,
    FSDP_EXECUTORS,
    DigenrlOptions,
    ExecutorOptions,
    ExecutorSpec,
    JaggOptions,
    LeanRetainOptions,
    LeanReweightOptions,
    NativeOptions,
    executor_input,
    serving,
)
from trainer.spec.family_algorithms import unsupported_pair
from trainer.spec.model import ModelSpec
from trainer.spec.prompt_cache import file_prompt_count, uncached_prompts
from trainer.spec.sections import CheckpointSpec, PromptsSpec, ResourcesSpec, RetrySpec, RewardSpec, SamplesSpec
from trainer.spec.sharding_choice import sharding_choice


class JobSpec(Section):
    name: str = Field("job", min_length=1, max_length=200)
    model: ModelSpec = Field(default_factory=ModelSpec)
    algorithm: AlgorithmSpec = Field(default_factory=AlgorithmSpec)
    executor: ExecutorSpec = Field(default_factory=NativeOptions)
    reward: list[RewardSpec] = Field(
        default_factory=lambda: [RewardSpec(name="brightness")], min_length=1, max_length=16
    )
    prompts: PromptsSpec = Field(default_factory=PromptsSpec)
    resources: ResourcesSpec = Field(default_factory=ResourcesSpec)
    samples: SamplesSpec = Field(default_factory=SamplesSpec)
    checkpoint: CheckpointSpec = Field(default_factory=CheckpointSpec)
    retry: RetrySpec = Field(default_factory=RetrySpec)
    seed: int = Field(0, ge=0, le=2**31 - 1)

    @model_validator(mode="before")
    @classmethod
    def _stored_before_same_noise(cls, data: Any) -> Any:
        """A spec stored before ``algorithm.init_same_noise`` existed (its model section still names ``dtype``,
        which every spec of that time recorded) ran with one starting noise per sample: it keeps doing so."""
        if not isinstance(data, dict):
            return data
        model, algorithm = data.get("model"), data.get("algorithm")
        before = isinstance(model, dict) and "dtype" in model
        if before and isinstance(algorithm, dict) and "init_same_noise" not in algorithm:
            data = {**data, "algorithm": {**algorithm, "init_same_noise": False}}
        return data

    @field_validator("executor", mode="before")
    @classmethod
    def _executor_named(cls, value: Any) -> Any:
        return executor_input(value)

    @field_validator("reward")
    @classmethod
    def _unique_rewards(cls, value: list[RewardSpec]) -> list[RewardSpec]:
        names = [r.name for r in value]
        if len(names) != len(set(names)):
            raise ValueError("each reward may appear once")
        return value

    @model_validator(mode="after")
    def _whole(self, info: ValidationInfo) -> JobSpec:
        """Every rule that joins sections, all checked: the problems are reported together."""
        problems = SpecProblems("JobSpec")
        self._cross_section(problems)
        if not is_stored(info):  # its prompt set was read when it was submitted, and may be large
            self._prompt_set_fits(problems)
        self._executor_fits(problems)
        problems.raise_all()
        return self

    def _prompt_set_fits(self, problems: SpecProblems) -> None:
        """An image family's prompt set is an edit set whose rows parse and whose images exist; a text family's
        is not an edit set."""
        problem = source_problem(self.model.family, self.prompts.source)
        if problem:
            problems.add("prompts.source", problem)

    def _cross_section(self, problems: SpecProblems) -> None:
        if self.model.path == BUILTIN_MODEL_PATH and self.model.family not in BUILTIN_FAMILIES:
            problems.add("model.family", f"the built-in tiny model exists for {', '.join(BUILTIN_FAMILIES)}")
        if self.model.path == BUILTIN_SHAPES_PATH and self.model.family != "sd3":
            problems.add("model.family", "the built-in shapes model is an SD3-family model: family 'sd3'")
        unsupported = unsupported_pair(self.model.family, self.algorithm.name)
        if unsupported:
            problems.add("algorithm.name", unsupported)
        if self.model.sharding == "fsdp":
            if self.world_size < 2:
                problems.add("model.sharding", "'fsdp' shards over several ranks and this job has one device")
            if self.executor.name not in FSDP_EXECUTORS:
                runs = ", ".join(FSDP_EXECUTORS)
                message = f"'fsdp' runs with {runs}; {self.executor.name} handles gradients and weights itself"
                problems.add("model.sharding", message)
        if self.model.precision == "fp16" and self.executor.name != "native":
            message = (
                "fp16 needs its loss scaled, and native scales each trained step's loss and unscales once before "
                f"clipping; {self.executor.name} backwards partial or rescaled losses whose scales would have to "
                "agree: use bf16 (or fp32)"
            )
            problems.add("model.precision", message)
        if self.model.text_encoders == "free":
            count = file_prompt_count(self.prompts.source)
            problem = None if count is None else uncached_prompts(count)
            if problem:
                problems.add("model.text_encoders", problem)
        if self.model.reference == "cpu":
            self._host_reference_fits(problems)
        if self.algorithm.rollout_chunks > 1 and self.executor.name != "native":
            message = f"chunked rollouts run with the native executor only; {self.executor.name} rolls out itself"
            problems.add("algorithm.rollout_chunks", message)

    def _host_reference_fits(self, problems: SpecProblems) -> None:
        """``model.reference: cpu`` moves a full copy of the starting weights to the host: one exists only under
        full fine-tuning on one rank or DDP."""
        if self.model.finetune == "lora":
            message = (
                "'cpu' keeps full fine-tuning's frozen copy on the host; under LoRA the reference is the base model "
                "with the adapter disabled, which holds no copy to move: allowed 'device'"
            )
            problems.add("model.reference", message)
        elif sharding_choice(self, self.world_size)[0] == "fsdp":
            message = (
                "under FSDP the reference is sharded like the policy (each rank holds its shard), not copied whole; "
                "'cpu' is for one rank or DDP: allowed 'device', or model.sharding 'ddp'"
            )
            problems.add("model.reference", message)

    def _executor_fits(self, problems: SpecProblems) -> None:
        """Executor/algorithm/resources pairs that are not exact or cannot run."""
        algo, executor = self.algorithm, self.executor
        if algo.family not in executor.families:
            message = (
                f"{executor.name} serves the {', '.join(executor.families)} family: its schedule is built on the "
                f"rollout's trajectory log-probs, and {algo.name} trains on re-noised clean samples, which have none; "
                f"allowed: {', '.join(serving(algo.family))}"
            )
            problems.add("executor.name", message)
            return
        if algo.family == "forward" and self.model.sharding == "fsdp":
            message = f"{algo.name} keeps its old policy as a copy of the unsharded trainable weights: use 'ddp'"
            problems.add("model.sharding", message)
        if algo.family == "forward" and executor.audit_first_step:
            message = (
                f"the audit replays one rollout trajectory under an executor and under native and compares their "
                f"gradients; {algo.name} trains on re-noised clean samples under native alone: leave it false"
            )
            problems.add("executor.audit_first_step", message)
        if isinstance(executor, LeanRetainOptions | LeanReweightOptions):
            self._lean_fits(executor, problems)
        if isinstance(executor, LeanRetainOptions) and executor.max_retained_graphs is not None:
            bound = retained_graph_bound(self)
            if bound > executor.max_retained_graphs and executor.on_memory_guard == "fail":
                problems.add(
                    "executor.max_retained_graphs",
                    f"{executor.name} would keep up to {bound} sample-step graphs per rank (local samples × "
                    f"{retained_per_sample(self)} graphs each), over {executor.max_retained_graphs}; raise it, or set "
                    f"executor.on_memory_guard to {guards(executor)}",
                )
        if isinstance(executor, LeanReweightOptions):
            self._reweight_fits(executor, problems)
        if isinstance(executor, JaggOptions):
            trained: int = algo.train_timesteps  # type: ignore[assignment]
            if algo.name == "flash_grpo":
                message = f"{executor.name} aggregates groups of trained steps; flash_grpo trains one"
                problems.add("executor.name", message)
            elif trained < executor.group_width:
                message = f"must be at most the trained steps per sample ({trained}): no full group otherwise"
                problems.add("executor.group_width", message)
            if executor.name != "jagg" and executor.probe_every is not None:
                message = (
                    f"{executor.name} keeps no graph for a routed group's interior steps, so it has no exact group "
                    "gradient to probe: leave it out, and audit the step instead (executor.audit_first_step), or probe "
                    "under jagg, whose gradient is the same"
                )
                problems.add("executor.probe_every", message)
        if self.resources.pools is not None:
            self._pools_fit_digenrl(problems)
        if isinstance(executor, DigenrlOptions):
            self._digenrl_fits(executor, problems)
        elif (algo.prompts_per_step * algo.group_size) % self.world_size:
            message = (
                f"prompts_per_step × group_size = {algo.prompts_per_step * algo.group_size} samples per step do not "
                f"divide over the {self.world_size} ranks (resources.devices × resources.nodes)"
            )
            problems.add("algorithm.prompts_per_step", message)

    def _lean_fits(self, executor: LeanRetainOptions | LeanReweightOptions, problems: SpecProblems) -> None:
        algo, name = self.algorithm, executor.name
        if algo.inner_epochs != 1 and executor.after_first_update != "native":
            message = (
                f"{name} reuses the rollout graphs: it needs exactly 1, or executor.after_first_update: "
                "'native' (its graphs for the first update only)"
            )
            problems.add("algorithm.inner_epochs", message)
        if algo.group_size % self.world_size:
            message = f"{name} shares each prompt over all {self.world_size} ranks: it must divide by them"
            problems.add("algorithm.group_size", message)

    def _reweight_fits(self, executor: LeanReweightOptions, problems: SpecProblems) -> None:
        algo = self.algorithm
        if algo.kl_beta > 0 and executor.kl != "extra_vjp":
            problems.add(
                "algorithm.kl_beta",
                "lean_reweight scales provisional gradients by the advantage, which the KL term must not be: "
                "set kl_beta to 0 or executor.kl to 'extra_vjp' (one more VJP per trained step)",
            )
        local = algo.group_size // self.world_size
        if executor.buffer_regime == "per_rank" and local != 1:
            problems.add(
                "executor.buffer_regime",
                f"'per_rank' needs one sample per prompt per rank; here group_size / ranks = {local}",
            )

    def _digenrl_fits(self, executor: DigenrlOptions, problems: SpecProblems) -> None:
        algo = self.algorithm
        if algo.inner_epochs != 1:
            problems.add("algorithm.inner_epochs", "digenrl trains each unit once: it needs exactly 1")
        if self.world_size < 2:
            problems.add("resources.devices", "digenrl needs at least 2 devices: a rollout and a trainer pool")
            return
        if executor.rollout_devices >= self.world_size:
            message = f"must leave at least one of the {self.world_size} devices to the trainer pool"
            problems.add("executor.rollout_devices", message)
            return
        trainers = self.world_size - executor.rollout_devices
        if algo.prompts_per_step % trainers:
            message = f"digenrl gives each of the {trainers} trainer(s) whole groups: it must divide by them"
            problems.add("algorithm.prompts_per_step", message)

    def _pools_fit_digenrl(self, problems: SpecProblems) -> None:
        """Only digenrl has pools; its rollout ranks are the rollout pool's devices, placed first."""
        pools, executor = self.resources.pools, self.executor
        assert pools is not None
        if not isinstance(executor, DigenrlOptions):
            message = f"only executor 'digenrl' has a rollout and a trainer pool, not {executor.name!r}"
            problems.add("resources.pools", message)
        elif "rollout_devices" not in executor.model_fields_set:
            executor.rollout_devices = pools.rollout.devices
        elif executor.rollout_devices != pools.rollout.devices:
            message = f"must equal resources.pools.rollout.devices ({pools.rollout.devices}) or be left out"
            problems.add("executor.rollout_devices", message)

    @property
    def world_size(self) -> int:
        return self.resources.devices * self.resources.nodes


def retained_graph_bound(spec: JobSpec) -> int:
    """Sample-step graphs lean_retain (or jagg_retain) keeps per rank until the rewards arrive: each local sample
    keeps ``retained_per_sample`` (only rows that keep a graph at a step forward it with grad)."""
    algo = spec.algorithm
    local = algo.prompts_per_step * algo.group_size // spec.world_size
    return local * retained_per_sample(spec)


def retained_per_sample(spec: JobSpec) -> int:
    """Graphs one sample keeps: one per trained step under lean_retain; under jagg_retain only the two ends of
    each routed group and every unrouted step, K_b (its backward passes)."""
    trained: int = spec.algorithm.train_timesteps  # type: ignore[assignment]
    executor = spec.executor
    return executor.backward_passes(trained) if isinstance(executor, JaggOptions) else trained


def guards(executor: LeanRetainOptions) -> str:
    """The fallback schedules ``executor.on_memory_guard`` allows, for a message."""
    allowed = get_args(type(executor).model_fields["on_memory_guard"].annotation)
    return " or ".join(repr(name) for name in allowed if name != "fail")


def parse_spec(
    data: Any,
    *,
    path_roots: list[str] | None = None,
    base_dir: str | None = None,
    allow_private_urls: bool = True,
) -> JobSpec:
    """Validate raw spec data; raises pydantic.ValidationError naming the field. Relative local paths are
    resolved against ``base_dir`` and come back absolute; ``allow_private_urls`` False refuses loopback and
    private reward URLs (trainer.spec.destinations)."""
    context = {"path_roots": path_roots, "base_dir": base_dir, "allow_private_urls": allow_private_urls}
    return JobSpec.model_validate(data, context=context)


def stored_spec(data: Any) -> JobSpec | None:
    """A spec the platform stored, read back without its files and plugins (checked when it was submitted:
    a model folder may have moved since); None when it no longer validates under today's rules."""
    try:
        return JobSpec.model_validate(data, context={"stored": True})
    except ValueError:
        return None


def with_executor(spec: JobSpec, options: ExecutorOptions) -> JobSpec:
    """A new spec: ``spec`` with another executor's options, validated as a whole (``spec`` is unchanged)."""
    data = spec.model_dump()
    data["executor"] = options.model_dump()
    return JobSpec.model_validate(data, context={"stored": True})


def spec_errors(exc: Exception) -> list[dict[str, str]]:
    """Flatten a validation failure into [{field, message}] with dotted field names."""
    from pydantic import ValidationError

    if not isinstance(exc, ValidationError):
        return [{"field": "", "message": str(exc)}]
    errors = []
    for err in exc.errors(include_url=False):
        loc = [str(p) for p in err["loc"]]
        if loc[:1] == ["executor"] and loc[1:2] and loc[1] in EXECUTORS:
            del loc[1]  # the union's tag: the executor's own name, not a field
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
