"""The SDE step with its log-probability, exactly as docs/algorithms.md §2.

One function serves rollout and training, so the log-probs of the two paths are computed by
the same arithmetic (the on-policy ratio must be exactly 1). The step index may differ per
sample (DanceGRPO trains a random permutation of steps), so ``i`` is a tensor of shape [B].
All step math is fp32 whatever the transformer's dtype, with the coefficients of the job's
``StepGrid`` (step_grid.py); ``diffusion_coefficient`` and ``score_factor`` are the fp64 formulas
the grid and the plans are computed from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import torch

if TYPE_CHECKING:
    from trainer.sampling.step_grid import StepGrid

SdeKind = Literal["flow_grpo", "flow_grpo_guard", "dance", "flash", "cps"]


@dataclass
class StepOutput:
    next: torch.Tensor
    log_prob: torch.Tensor  # [B], mean over non-batch dims
    mean: torch.Tensor
    kl_std: torch.Tensor  # [B]: g for the Gaussian SDEs, τ for CPS (what the Flow-GRPO KL divides by)
    tau: torch.Tensor  # [B], std of the transition
    velocity: torch.Tensor  # the v the step was taken with (MixGRPO-Flash's solver starts from its x̂_0)


def _per_sample(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return values.reshape(-1, *([1] * (like.dim() - 1)))


def diffusion_coefficient(kind: SdeKind, sigmas: torch.Tensor, i: torch.Tensor, level: float) -> torch.Tensor:
    """g_i per sample for the Gaussian samplers (§2.2), in fp64."""
    s = sigmas[i]
    if kind in ("flow_grpo", "flow_grpo_guard"):
        denominator = 1 - torch.where(s == 1, sigmas[1], s)
        return level * torch.sqrt(s / denominator)
    if kind == "dance":
        return torch.full_like(s, level)
    if kind == "flash":
        return sigmas[1] * s
    raise ValueError(f"no diffusion coefficient for sde kind {kind!r}")


def score_factor(kind: SdeKind, sigmas: torch.Tensor, i: torch.Tensor, level: float) -> torch.Tensor:
    """c_i = |h_i| / τ_i, the score-function factor of §3.4, from the run's own coefficients."""
    s, d = sigmas[i], sigmas[i + 1] - sigmas[i]
    g = diffusion_coefficient(kind, sigmas, i, level)
    h = d * (1 + g * g * (1 - s) / (2 * s))
    return h.abs() / (g * torch.sqrt(-d))


def sde_step(
    velocity: torch.Tensor,
    x: torch.Tensor,
    i: torch.Tensor,
    grid: StepGrid,
    x_next: torch.Tensor | None = None,
    noise: torch.Tensor | None = None,
) -> StepOutput:
    """One stochastic transition x_i → x_{i+1}; with ``x_next`` given, only its log-prob.

    ``noise`` (standard normal, shape of x) is used when ``x_next`` is None. The coefficients are the
    grid's, gathered on its device (the latents'): nothing here is built on the host.
    """
    v, x = velocity.float(), x.float()
    i = i.to(grid.device)
    x_coefficient, v_coefficient, tau, scale, offset = (
        _per_sample(table[i], x)
        for table in (grid.x_coefficient, grid.v_coefficient, grid.tau, grid.residual_scale, grid.log_offset)
    )
    mean = x_coefficient * x + v_coefficient * v
    if x_next is None:
        if noise is None:
            raise ValueError("sde_step needs either x_next or noise")
        x_next = mean + tau * noise.float()
    x_next = x_next.float()
    log_prob = offset - (x_next.detach() - mean) ** 2 * scale
    reduce_dims = tuple(range(1, x.dim()))
    return StepOutput(
        next=x_next,
        log_prob=log_prob.mean(dim=reduce_dims),
        mean=mean,
        kl_std=grid.kl_std[i],
        tau=grid.tau[i],
        velocity=v,
    )


def ode_step(velocity: torch.Tensor, x: torch.Tensor, i: torch.Tensor, grid: StepGrid) -> torch.Tensor:
    """The Euler step x + Δ v (g = 0); it has no log-prob."""
    return x.float() + _per_sample(grid.delta[i.to(grid.device)], x) * velocity.float()
