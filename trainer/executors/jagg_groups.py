"""JAGG's routing and upstream aggregation for the executors that compose it with Lean (docs/executors.md §2,
JAGG arXiv 2607.17572; composition derived in docs/executors.md "JAGG on Lean").

A sample's trained steps, sorted high noise first, are cut into consecutive groups of W; the first
n_J = round(jagg_frac · ⌈K/W⌉) full groups are routed (``JaggOptions.routed_groups``). In a routed group each
step's upstream gradient s_j = ∂L_j/∂v_j is taken through the step math alone, and with
α_j = (σ_0 − σ_j)/(σ_0 − σ_{W−1}) the group's gradient is J_0ᵀ Σ(1−α_j)s_j + J_{W−1}ᵀ Σα_j s_j: only the two
endpoints need a graph. Which (row, step) pairs keep one is ``graph_mask``; the rollout forwards the rest of the
trained pairs without grad (graph_rollout.py).
"""

from __future__ import annotations

import dataclasses

import torch

from trainer.algorithms.base import StepPlan
from trainer.job import StepTerms, TrainingJob
from trainer.loss import clipped_policy_loss, reference_kl
from trainer.sampling.sde_step import sde_step
from trainer.sampling.step_grid import StepGrid
from trainer.spec import JaggOptions


def routed_plan(plan: StepPlan, options: JaggOptions) -> tuple[StepPlan, int]:
    """The plan with each row's trained steps sorted high noise first (jagg's order) when any group is routed,
    and the number of routed groups n_J."""
    routed = options.routed_groups(plan.trained.shape[1])
    if routed == 0:
        return plan, 0
    return dataclasses.replace(plan, trained=plan.trained.sort(dim=1).values), routed


def group_positions(options: JaggOptions, group: int) -> list[int]:
    """The sorted training positions routed group ``group`` holds."""
    width = options.group_width
    return list(range(group * width, (group + 1) * width))


def graph_mask(plan: StepPlan, options: JaggOptions, routed: int, steps: int) -> torch.Tensor:
    """[rows, steps] bool on the host: the trained (row, step) pairs whose graph the schedule backwards, each
    routed group's two endpoints and every unrouted step; a routed group's interior steps need none."""
    rows, trained = plan.trained.shape
    mask = torch.zeros((rows, steps), dtype=torch.bool)
    width = options.group_width
    needed = [p for p in range(trained) if p >= routed * width or p % width in (0, width - 1)]
    for position in needed:
        mask[torch.arange(rows), plan.trained[:, position]] = True
    return mask


class GroupUpstream:
    """Σ_j (1−α_j) s_j and Σ_j α_j s_j over one routed group's steps, per row, where the latents live."""

    def __init__(self, grid: StepGrid, first: torch.Tensor, last: torch.Tensor) -> None:
        self.sigmas = grid.sigmas
        self.first = first.to(grid.device)
        self.span = self.sigmas[self.first] - self.sigmas[last.to(grid.device)]
        self.base: torch.Tensor | None = None
        self.corr: torch.Tensor | None = None

    def add(self, s_j: torch.Tensor, index: torch.Tensor) -> None:
        """Fold in one step's upstream gradient; ``index`` holds each row's step."""
        alpha = (self.sigmas[self.first] - self.sigmas[index.to(self.sigmas.device)]) / self.span
        alpha = alpha.reshape(-1, *([1] * (s_j.dim() - 1)))
        base, corr = (1 - alpha) * s_j, alpha * s_j
        self.base = base if self.base is None else self.base + base
        self.corr = corr if self.corr is None else self.corr + corr

    @property
    def aggregates(self) -> list[torch.Tensor]:
        """[s_base, s_corr], the cotangents of the group's first and last velocity."""
        assert self.base is not None and self.corr is not None
        return [self.base, self.corr]


def velocity_terms(
    job: TrainingJob,
    proxy: torch.Tensor,
    x: torch.Tensor,
    x_next: torch.Tensor,
    index: torch.Tensor,
    old: torch.Tensor,
    advantages: torch.Tensor,
    plan: StepPlan,
    reference_mean: torch.Tensor | None,
) -> StepTerms:
    """Native's per-step loss (clipped surrogate + β·KL against ``reference_mean``) as a function of the velocity
    alone: its gradient by ``proxy`` is s_j, and no transformer backward happens."""
    spec, grid = job.spec.algorithm, job.denoiser.grid
    out = sde_step(proxy, x, index, grid, x_next)
    weights = None if plan.weights is None else plan.weights.to(x.device)
    terms = clipped_policy_loss(out.log_prob, old, advantages, spec.clip_range, weights)
    kl = None if reference_mean is None else reference_kl(out.mean, reference_mean, job.algorithm.kl_std(out))
    return StepTerms.of(out.log_prob, old, terms, kl, spec.kl_beta)
