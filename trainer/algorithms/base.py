"""The algorithm interface: an algorithm only *plans* a step (algorithms.md §3).

It says, for every local sample, which of the T steps use the SDE (the rest are Euler ODE),
which steps are trained and in what order, and an optional positive loss weight per sample.
Sampling, advantages and the loss are shared code; how it is scheduled is the executor's job.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import torch

from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.sampling.sde_step import SdeKind
from trainer.spec import AlgorithmSpec


@dataclass
class StepPlan:
    sde: torch.Tensor  # [B, T] bool: stochastic step (has a log-prob)
    trained: torch.Tensor  # [B, K] long: trained step indices, in training order; all sde, never T-1
    weights: torch.Tensor | None = None  # [B] positive loss weights, or None for 1


class Algorithm(ABC):
    sde_kind: SdeKind = "flow_grpo"

    def __init__(self, spec: AlgorithmSpec, sigmas: torch.Tensor, seed: int) -> None:
        self.spec = spec
        self.sigmas = sigmas
        self.seed = seed
        self.steps = spec.sampling_steps
        self.trained_count: int = spec.train_timesteps  # type: ignore[assignment]

    @property
    def level(self) -> float:
        return self.spec.noise_level

    @abstractmethod
    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan: ...
