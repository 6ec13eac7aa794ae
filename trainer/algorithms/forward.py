"""The forward-process family's interface (docs/algorithms.md §7): DiffusionNFT, AWM and DGPO.

They need no trajectory log-probs: the rollout runs its plain ODE (any sampler would do), its clean
latents are re-noised by the forward process x_σ = (1 − σ) x_0 + σ ε at K times of the σ grid, and a
flow-matching loss trains the velocity there. ``plan`` returns those times as ``StepPlan.trained``
(indices into the grid) with the seed of each time's noise; ``loss`` turns the velocities at one time
into the loss. The job re-noises, forwards and keeps the old policy (``trainer/algorithms/old_policy.py``), and
adds the velocity-space KLs of ``velocity_kl``: to the frozen reference (``kl_beta``) and, for AWM, to an EMA of
the policy (``ema_kl_beta``).
"""

from __future__ import annotations

from abc import abstractmethod
from dataclasses import dataclass
from typing import ClassVar

import torch

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.seeding import step_generator, stream_seed
from trainer.spec import AlgorithmSpec
from trainer.spec.algorithm import UPSTREAM
from trainer.spec.forward_family import AWM_EMA_DECAY_CAP, AWM_EMA_DECAY_RATE, FORWARD_UPSTREAM


def velocity_kl(velocity: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
    """mean_b mean (v_θ − v_other)² over each row's elements: the released trainers' KL in velocity space
    (NVlabs ``kl_div_loss``, AWM's ``kl_loss`` and ``ema_kl_loss``, DGPO's ``kl_loss``), to be weighted by β."""
    return (velocity - other).square().reshape(velocity.shape[0], -1).mean(dim=1).mean()


@dataclass
class Renoised:
    """Clean latents x_0 re-noised to σ by the forward process with noise ε; the flow-matching target is ε − x_0."""

    clean: torch.Tensor  # [B, *latent]
    noise: torch.Tensor  # [B, *latent]
    sigma: torch.Tensor  # [B]

    @classmethod
    def draw(cls, clean: torch.Tensor, sigma: torch.Tensor, seeds: torch.Tensor) -> Renoised:
        """Each row's noise from its own seed (equal on every rank and in every resumed run)."""
        shape = tuple(clean.shape[1:])
        rows = [torch.randn(shape, generator=torch.Generator().manual_seed(int(s))) for s in seeds.tolist()]
        return cls(clean, torch.stack(rows).to(clean), sigma.to(clean))

    def expand(self, value: torch.Tensor) -> torch.Tensor:
        return value.reshape(-1, *([1] * (self.clean.dim() - 1)))

    @property
    def noised(self) -> torch.Tensor:
        sigma = self.expand(self.sigma)
        return (1 - sigma) * self.clean + sigma * self.noise

    @property
    def target(self) -> torch.Tensor:
        return self.noise - self.clean


@dataclass
class ForwardInputs:
    """What a forward algorithm's loss reads at one re-noising time of every local row."""

    velocity: torch.Tensor  # v_θ(x_σ, σ, c), with grad
    old: torch.Tensor | None  # the old policy's velocity (``uses_old``), no grad
    reference: torch.Tensor | None  # the frozen reference's velocity (``uses_reference``), no grad
    renoised: Renoised
    advantages: torch.Tensor  # [B] this rank's group advantages
    noise_seeds: torch.Tensor  # [B] the time's noise seeds (DGPO: one per prompt group)
    dist: Distributed


@dataclass
class ForwardTerms:
    loss: torch.Tensor  # differentiable, mean over the local rows
    ratio: torch.Tensor  # [B] detached; ones where the loss has no ratio
    clipped: torch.Tensor  # [B] bool, where a clip was active


class ForwardAlgorithm(Algorithm):
    family = "forward"
    uses_old: ClassVar[bool] = True
    uses_reference: ClassVar[bool] = False

    def __init__(self, spec: AlgorithmSpec, sigmas: torch.Tensor, seed: int) -> None:
        super().__init__(spec, sigmas, seed)
        self.upstream = FORWARD_UPSTREAM[spec.name]

    @property
    def level(self) -> float:
        """The σ grid's SDE level, which no forward algorithm reads (its rollout is the ODE): the placeholder."""
        return UPSTREAM[self.spec.name].noise_level

    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan:
        rows = len(batch.prompts)
        times = self.times(batch)
        shared = self.shares_noise_in_group
        keys = batch.group_ids if shared else batch.sample_ids
        seeds = [
            [stream_seed(self.seed, batch.step, "renoise", int(key), 0 if shared else k) for k in range(times.shape[1])]
            for key in keys.tolist()
        ]
        return StepPlan(torch.zeros(rows, self.steps, dtype=torch.bool), times, noise_seeds=torch.tensor(seeds))

    shares_noise_in_group: ClassVar[bool] = False  # DGPO: a group's members share one noise at every time

    def times(self, batch: SampleBatch) -> torch.Tensor:
        """[B, K] grid indices: NVlabs' per-sample random K of the T times, or Flow-Factory's K stratified over
        the times with σ ≥ 1 − fraction (from σ_1 without the first), the same for every row."""
        rows, count = len(batch.prompts), self.trained_count
        if self.upstream.time_draw == "per_sample_subset":
            draws = []
            for sample in batch.sample_ids.tolist():
                generator = torch.Generator().manual_seed(stream_seed(self.seed, batch.step, "times", sample))
                draws.append(torch.randperm(self.steps, generator=generator)[:count])
            return torch.stack(draws)
        sigmas = self.sigmas[: self.steps].double()
        valid = torch.nonzero(sigmas >= 1 - self.upstream.time_fraction - 1e-6).flatten()
        start = int(valid.min()) + (0 if self.upstream.include_first else 1)
        end = int(valid.max())
        bounds = torch.linspace(start, end, count + 1)
        lower, upper = bounds[:-1].long(), bounds[1:].long()
        uniform = torch.rand(count, generator=step_generator(self.seed, batch.step, "forward-times"))
        shared = (lower + (uniform * (upper - lower)).long()).clamp(0, self.steps - 1)
        return shared.expand(rows, -1).clone()

    def optimizer_steps(self, step: int) -> int:
        """Optimizer steps done after the run's 1-based ``step``: one per inner epoch (upstream's global_step)."""
        return step * self.spec.inner_epochs

    def old_decay(self, step: int) -> float:
        """The old policy's decay after ``step``: min(rate · (n − lag), cap), n the optimizer steps done (NVlabs
        reads global_step after its increment, DGPO's ema_ref.step before it)."""
        up = self.upstream
        return min(up.old_decay_rate * (self.optimizer_steps(step) - up.old_decay_lag), up.old_decay_cap)

    def samples_with_old(self, step: int) -> bool:
        """Whether ``step``'s rollout samples with the old policy's weights: NFT always; DGPO once the optimizer
        steps done before it exceed ``switch_ema_ref`` (upstream's ``global_step > switch_ema_ref``)."""
        if not self.upstream.samples_with_old:
            return False
        switch = self.spec.switch_ema_ref
        return switch is None or self.optimizer_steps(step - 1) > switch

    @property
    def ema_kl_beta(self) -> float:
        """The weight of the KL to the policy's EMA (AWM; 0: no EMA is kept)."""
        return self.spec.ema_kl_beta or 0.0

    def ema_decay(self, step: int) -> float:
        """The EMA's decay after ``step``: min(0.001 · n, 0.3), n the optimizer steps done (AWM's 'linear' kl_ema)."""
        return min(AWM_EMA_DECAY_RATE * self.optimizer_steps(step), AWM_EMA_DECAY_CAP)

    @abstractmethod
    def loss(self, inputs: ForwardInputs) -> ForwardTerms: ...
