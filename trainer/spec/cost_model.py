"""The executors' cost model: one step's time from the cost of one forward and one backward.

One formula per executor, used twice: with unit costs in forwards (F = F_g = 1 per row, B = b) it is
the analytical cost per sample the spec's bound and the compare page show; with the costs the bench
measures it is the bench's predicted step time. Torch-free: the server imports it.

T = sampling_steps, K = trained steps, E = inner epochs, n = the rank's rows, F(n), F_g(n), B(n) the
forward without grad, with grad and the backward of one step at n rows, D(n) the VAE decode of n final
latents:

- native          T·F(n) + D(n) + E·[K·(F_g + B)(n) + KL]
- lean_retain     (T−K)·F(n) + D(n) + K·(F_g + B)(n) + KL + (E−1)·native's update
- lean_reweight   n·[(T−K)·F(1) + K·(F_g + B)(1) + D(1)] + KL + (E−1)·native's update   (one sample at a time)
- jagg            T·F(n) + D(n) + E·[n_J·(2F_g + (W−2)F + 2B)(n) + (K − n_J·W)·(F_g + B)(n) + KL]
- jagg_retain     lean_retain's with K_b = K − n_J·(W−2) in place of K: (T−K_b)·F(n) + D(n) + K_b·(F_g + B)(n) + KL
                  + (E−1)·native's update (a routed group's interior steps are rollout forwards without grad)
- jagg_reweight   lean_reweight's with K_b in place of K: n·[(T−K_b)·F(1) + K_b·(F_g + B)(1) + D(1)] + KL + (E−1)·…
- digenrl         max(g, h) + min(g, h)/P, g = ⌈groups/R⌉·(T·F(G) + D(G)) + t_fix,
                  h = ⌈units/trainers⌉·⌈K/tsb⌉·(F_g + B)(tsb)

lean_retain forwards with grad, and backwards, only the rows that train at a step (n·K rows of each over
the rollout, the other n·(T−K) rows without grad): Flow-GRPO's rows all train the same steps; DanceGRPO's
and Flash-GRPO's per-sample steps split each rollout step into two partial batches, which the formula
prices as the same rows at n. KL = K·F(n), a reference forward per trained step, when kl_beta > 0.
digenrl's pipeline overlaps its R generators with its trainers (P = ⌈groups/R⌉ stages: a trainer starts
on a group once all of it has arrived); it has no analytical bound. b = 2 for full fine-tuning, 1 for LoRA,
+1 with gradient checkpointing, D = 0: the spec's bound counts transformer work only. The bench measures D
at each shape, since lean_reweight decodes each sample alone where the others decode the batch at once;
collectives, reward and optimizer are outside (the bench adds them measured).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from trainer.spec import (
    DigenrlOptions,
    ExecutorOptions,
    JaggOptions,
    JobSpec,
    LeanRetainOptions,
    LeanReweightOptions,
    NativeOptions,
    stored_spec,
)


@dataclass(frozen=True)
class UnitCosts:
    """Seconds (or forwards) of one step at some row count."""

    forward: float  # F: without grad
    forward_grad: float  # F_g: with grad
    backward: float  # B: of one step's loss
    decode: float = 0.0  # D: the VAE decode of the rollout's final latents

    @property
    def exact(self) -> float:
        return self.forward_grad + self.backward


Costs = Callable[[int], UnitCosts]  # row count → that shape's unit costs


def step_cost(spec: JobSpec, options: ExecutorOptions, costs: Costs, rows: int, fixed: float = 0.0) -> float:
    """One optimizer step of ``options``' executor on ``spec``'s algorithm, on a rank with ``rows`` samples;
    ``fixed`` is the reward and optimizer time (it overlaps the trainers in digenrl's pipeline)."""
    algo = spec.algorithm
    steps, trained, epochs = algo.sampling_steps, algo.train_timesteps or algo.sampling_steps - 1, algo.inner_epochs
    batch = costs(rows)
    reference = trained * batch.forward if algo.kl_beta > 0 else 0.0
    update = trained * batch.exact + reference  # one native update: re-forward, backward, μ_ref
    name = options.name
    if name == "native":
        return steps * batch.forward + batch.decode + epochs * update + fixed
    # The rollout's trained steps with a graph, per sample: K under Lean, K_b under JAGG composed with it.
    kept = options.backward_passes(trained) if isinstance(options, JaggOptions) else trained
    if isinstance(options, LeanRetainOptions):  # lean_retain, jagg_retain
        first = kept * batch.exact + reference  # the update from the kept graphs
        return (steps - kept) * batch.forward + batch.decode + first + (epochs - 1) * update + fixed
    if isinstance(options, LeanReweightOptions):  # lean_reweight, jagg_reweight
        one = costs(1)
        rollouts = rows * ((steps - kept) * one.forward + kept * one.exact + one.decode)
        return rollouts + reference + (epochs - 1) * update + fixed
    if isinstance(options, JaggOptions):
        routed, width = options.routed_groups(trained), options.group_width
        joint = 2 * batch.forward_grad + (width - 2) * batch.forward + 2 * batch.backward
        jagg_update = routed * joint + (trained - routed * width) * batch.exact + reference
        return steps * batch.forward + batch.decode + epochs * jagg_update + fixed
    if isinstance(options, DigenrlOptions):
        return digenrl_cost(spec, options, costs, fixed)
    raise ValueError(f"no cost model for executor {name!r}")


def digenrl_cost(spec: JobSpec, options: DigenrlOptions, costs: Costs, fixed: float) -> float:
    algo = spec.algorithm
    trained: int = algo.train_timesteps  # type: ignore[assignment]
    generators, trainers = options.rollout_devices, spec.world_size - options.rollout_devices
    groups, units = algo.prompts_per_step, algo.prompts_per_step * algo.group_size
    tsb = min(options.timestep_batch or trained, trained)
    stages = math.ceil(groups / generators)
    group = costs(algo.group_size)
    g = stages * (algo.sampling_steps * group.forward + group.decode) + fixed
    h = math.ceil(units / trainers) * math.ceil(trained / tsb) * costs(tsb).exact
    return max(g, h) + min(g, h) / stages


def forward_units(spec: JobSpec) -> Costs:
    """Unit costs in forwards per row: F = F_g = 1, B = b."""
    model = spec.model
    backward = (2 if model.finetune == "full" else 1) + (1 if model.gradient_checkpointing else 0)
    return lambda rows: UnitCosts(rows, rows, backward * rows)


def _spec(spec: JobSpec | dict[str, Any]) -> JobSpec | None:
    return spec if isinstance(spec, JobSpec) else stored_spec(spec)


def analytical_cost(spec: JobSpec | dict[str, Any]) -> float | None:
    """The spec's executor's cost per sample per step, in forwards; None for digenrl (a multi-process
    pipeline) or a stored spec that no longer validates."""
    parsed = _spec(spec)
    if parsed is None or isinstance(parsed.executor, DigenrlOptions):
        return None
    return step_cost(parsed, parsed.executor, forward_units(parsed), rows=1)


def native_cost(spec: JobSpec | dict[str, Any]) -> float | None:
    """Native's cost per sample per step on the same spec, whatever its executor."""
    parsed = _spec(spec)
    if parsed is None:
        return None
    return step_cost(parsed, NativeOptions(), forward_units(parsed), rows=1)


def bound_speedup(spec: JobSpec | dict[str, Any]) -> float | None:
    """The analytical speedup over native on the same spec, native cost / executor cost; None for digenrl."""
    parsed = _spec(spec)  # a stored spec is read once for both costs
    if parsed is None:
        return None
    cost, base = analytical_cost(parsed), native_cost(parsed)
    return base / cost if cost and base else None
