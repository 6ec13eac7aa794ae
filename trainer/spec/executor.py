"""The ``executor`` section: one options model per executor, told apart by ``name``.

This union is the one place executor names are written; every other list of them (the trainer's
registry, the server, the submit form, the docs, the bench) is derived from it. Each option has its
one default here. A spec stored before the union existed held every executor's options, unset ones
as null; nulls are read as "not set", so such a spec still validates.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal, get_args

from pydantic import Field

from trainer.spec.base import Section, SpecError
from trainer.spec.forward_family import Family

# The algorithm families an executor serves (docs/algorithms.md §7): a schedule built on the rollout's
# trajectory log-probs serves the GRPO family only; one that re-forwards after the rollout serves both.
TRAJECTORY_ONLY: tuple[Family, ...] = ("grpo",)


class ExecutorSection(Section):
    """What every executor's options hold."""

    # Class A (docs/executors.md §1): another gradient estimator than native's, so its speed is shown with its
    # audited cosine. The trainer's executor declares the same class (a test holds the two together).
    approximate: ClassVar[bool] = False

    audit_first_step: bool = Field(
        False,
        description="before the first step, audit this executor's gradient against native's on that step "
        "(as python -m trainer audit) and log audit/cosine, audit/rel_l2 and audit/failed once",
    )


class NativeOptions(ExecutorSection):
    """The reference schedule: roll out without grad, then re-forward and backward every trained step."""

    name: Literal["native"] = "native"
    families: ClassVar[tuple[Family, ...]] = ("grpo", "forward")


class LeanRetainOptions(ExecutorSection):
    """Keep each trained step's graph from the rollout and backward it once the advantages are known."""

    name: Literal["lean_retain"] = "lean_retain"
    families: ClassVar[tuple[Family, ...]] = TRAJECTORY_ONLY
    max_retained_graphs: int | None = Field(
        None,
        ge=1,
        description="graphs kept at once per rank before refusing (default: the most that fit "
        "resources.memory_budget, else no limit)",
    )
    on_memory_guard: Literal["fail", "native", "lean_reweight"] = Field(
        "fail", description="over max_retained_graphs, refuse the spec (fail) or run this schedule instead"
    )
    after_first_update: Literal["native"] | None = Field(
        None, description="with inner_epochs > 1, native's updates after the first (the hybrid schedule)"
    )


class LeanReweightOptions(ExecutorSection):
    """Backward each sample's trained steps during its rollout, then rescale by the advantage."""

    name: Literal["lean_reweight"] = "lean_reweight"
    families: ClassVar[tuple[Family, ...]] = TRAJECTORY_ONLY
    buffer_regime: Literal["auto", "per_rank", "per_sample", "affine"] = Field(
        "auto", description="how per-sample gradients are buffered"
    )
    kl: Literal["require_zero", "extra_vjp"] = Field(
        "require_zero", description="refuse kl_beta > 0, or pay one more VJP per trained step for the KL"
    )
    on_adv_clip: Literal["fail", "log", "native_fallback"] = Field(
        "fail", description="with a global std: what to do when the advantage clip bites"
    )
    after_first_update: Literal["native"] | None = Field(
        None, description="with inner_epochs > 1, native's updates after the first (the hybrid schedule)"
    )


class JaggOptions(ExecutorSection):
    """Backward only the two ends of each routed group of trained steps, interpolating the rest."""

    name: Literal["jagg"] = "jagg"
    families: ClassVar[tuple[Family, ...]] = TRAJECTORY_ONLY
    approximate: ClassVar[bool] = True
    group_width: int = Field(4, ge=2, description="trained steps per routed group")
    jagg_frac: float = Field(0.6, ge=0, le=1, description="fraction of groups (high noise) aggregated")
    cosine_warn: float | None = Field(
        None, ge=-1, le=1, description="warn when the audit's or a probe's cosine falls below (default: never)"
    )
    probe_every: int | None = Field(
        None, ge=1, description="every this many steps, log each routed group's cosine with its exact gradient"
    )

    def routed_groups(self, trained: int) -> int:
        """n_J = round(jagg_frac · ⌈K/W⌉), half up, counting full groups only."""
        width = self.group_width
        return min(trained // width, math.floor(self.jagg_frac * math.ceil(trained / width) + 0.5))

    def backward_passes(self, trained: int) -> int:
        """K_b: each routed group takes its 2 end backwards, every other trained step its own."""
        return trained - self.routed_groups(trained) * (self.group_width - 2)


class JaggRetainOptions(JaggOptions, LeanRetainOptions):
    """JAGG on Lean-Retain: the rollout keeps the graphs JAGG backwards (each routed group's two ends, every
    unrouted step), the interior steps' upstream gradients come from the rollout's velocities."""

    name: Literal["jagg_retain"] = "jagg_retain"  # type: ignore[assignment]
    on_memory_guard: Literal["fail", "jagg", "jagg_reweight"] = Field(  # type: ignore[assignment]
        "fail", description="over max_retained_graphs, refuse the spec (fail) or run this schedule instead"
    )


class JaggReweightOptions(JaggOptions, LeanReweightOptions):
    """JAGG on Lean-Reweight: each sample's routed groups take one provisional joint backward with the
    unit-advantage upstream aggregates during its rollout, then the advantage scales it."""

    name: Literal["jagg_reweight"] = "jagg_reweight"  # type: ignore[assignment]


class DigenrlOptions(ExecutorSection):
    """A rollout pool and a trainer pool, pipelined group by group."""

    name: Literal["digenrl"] = "digenrl"
    families: ClassVar[tuple[Family, ...]] = TRAJECTORY_ONLY
    rollout_devices: int = Field(
        1, ge=1, description="devices in the rollout pool (with resources.pools: the rollout pool's devices)"
    )
    max_staleness: int = Field(0, ge=0, le=1, description="policy versions a unit may lag")
    timestep_batch: int | None = Field(
        None, ge=1, description="trained steps replayed per batch (default: all of a unit's)"
    )
    trainer_assisted: bool = Field(False, description="the trainer generates when it would idle")


ExecutorOptions = (
    NativeOptions
    | LeanRetainOptions
    | LeanReweightOptions
    | JaggOptions
    | JaggRetainOptions
    | JaggReweightOptions
    | DigenrlOptions
)
ExecutorSpec = Annotated[ExecutorOptions, Field(discriminator="name")]

OPTION_MODELS: dict[str, type[ExecutorOptions]] = {
    model.model_fields["name"].default: model for model in get_args(ExecutorOptions)
}
EXECUTORS: tuple[str, ...] = tuple(OPTION_MODELS)
# Executors that run under model.sharding 'fsdp' (the Lean ones, jagg and its compositions reduce once per optimizer
# step).
FSDP_EXECUTORS = ("native", "lean_retain", "lean_reweight", "jagg", "jagg_retain", "jagg_reweight")
# Options each executor accepts, derived from the models above.
EXECUTOR_OPTIONS: dict[str, frozenset[str]] = {
    name: frozenset(model.model_fields) - {"name"} for name, model in OPTION_MODELS.items()
}


def serving(family: Family) -> list[str]:
    """The executors that serve ``family``, in the union's order."""
    return [name for name, model in OPTION_MODELS.items() if family in model.families]


def default_options(name: str) -> ExecutorOptions:
    """An executor's options with every default: what a spec naming only the executor gets."""
    return OPTION_MODELS[name]()


def executor_input(value: Any) -> Any:
    """Raw executor data, checked before the union reads it: the name defaults to 'native', an unknown
    name or another executor's option is refused naming the field, and null options mean "not set"."""
    if not isinstance(value, dict):
        return value
    data = {key: option for key, option in value.items() if option is not None}
    name = data.setdefault("name", "native")
    if not isinstance(name, str) or name not in OPTION_MODELS:
        raise SpecError("name", f"unknown executor {name!r}; allowed: {', '.join(EXECUTORS)}")
    for key in data:
        owners = [owner for owner, options in EXECUTOR_OPTIONS.items() if key in options]
        if key not in OPTION_MODELS[name].model_fields and owners:
            message = f"does not apply to executor {name!r}; it is an option of {', '.join(owners)}"
            raise SpecError(key, message)
    return data
