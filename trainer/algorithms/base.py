"""The algorithm interface: an algorithm only *plans* a step (docs/algorithms.md §3).

It says, for every local sample, which of the T steps use the SDE (the rest are Euler ODE),
which steps are trained and in what order, and an optional positive loss weight per sample.
Sampling, advantages and the loss are shared code; how it is scheduled is the executor's job.

An algorithm belongs to one ``family`` (docs/algorithms.md §7): 'grpo' trains the planned steps of the
reverse trajectory; 'forward' (``trainer/algorithms/forward.py``) plans K re-noising times per sample on the
same σ grid, with the seed of each time's noise, and adds the loss of a re-noised clean sample.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, fields, replace
from typing import ClassVar

import torch

from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.sampling.dpm_solver import OdeTail
from trainer.sampling.sde_step import SdeKind, StepOutput
from trainer.spec import AlgorithmSpec


@dataclass
class StepPlan:
    sde: torch.Tensor  # [B, T] bool: stochastic step (has a log-prob)
    trained: torch.Tensor  # [B, K] long: trained step indices, in training order; all sde, never T-1
    weights: torch.Tensor | None = None  # [B] positive loss weights, or None for 1
    noise_seeds: torch.Tensor | None = None  # [B, K] forward family: the seed of each re-noising time's noise
    tail: OdeTail | None = None  # MixGRPO-Flash: the steps from tail.start on are its solver's, for every row

    def select(self, rows: torch.Tensor) -> StepPlan:
        """The plan of some rows (a rollout chunk, a prompt group): every per-row field indexed, the rest kept."""
        per_row = {f.name: getattr(self, f.name)[rows] for f in fields(self) if torch.is_tensor(getattr(self, f.name))}
        return replace(self, **per_row)


class Algorithm(ABC):
    family: ClassVar[str] = "grpo"  # 'grpo' or 'forward' (trainer/spec/forward_family.py)
    gaussian_kind: SdeKind = "flow_grpo"  # the algorithm's own Gaussian step (docs/algorithms.md §2.2)

    def __init__(self, spec: AlgorithmSpec, sigmas: torch.Tensor, seed: int) -> None:
        self.spec = spec
        # The stochastic step every rollout and trained step takes: CPS where the spec selects it (§2.3).
        self.sde_kind: SdeKind = "cps" if spec.sampler == "cps" else self.gaussian_kind
        if spec.guard:  # GRPO-Guard's τ-scaled log-probability (docs/algorithms.md §5.3)
            self.sde_kind = "flow_grpo_guard"
        self.sigmas = sigmas
        self.seed = seed
        self.steps = spec.sampling_steps
        self.trained_count: int = spec.train_timesteps  # type: ignore[assignment]

    @property
    def level(self) -> float:
        return self.spec.noise_level

    def kl_std(self, out: StepOutput) -> torch.Tensor:
        """[B] what the KL term divides (μ_θ − μ_ref)² by, twice squared (docs/algorithms.md §5.2): the
        step's coefficient g (``kl_form: flow_grpo``; τ itself under CPS) or its std τ (``exact``)."""
        return out.kl_std if self.spec.kl_form == "flow_grpo" else out.tau

    @abstractmethod
    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan: ...
