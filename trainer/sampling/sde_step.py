"""The SDE step with its log-probability, exactly as docs/algorithms.md §2.

One function serves rollout and training, so the log-probs of the two paths are computed by
the same arithmetic (the on-policy ratio must be exactly 1). The step index may differ per
sample (DanceGRPO trains a random permutation of steps), so ``i`` is a tensor of shape [B].
All step math is fp32 whatever the transformer's dtype.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import torch

SdeKind = Literal["flow_grpo", "dance", "flash", "cps"]


@dataclass
class StepOutput:
    next: torch.Tensor
    log_prob: torch.Tensor  # [B], mean over non-batch dims
    mean: torch.Tensor
    kl_std: torch.Tensor  # [B]: g for the Gaussian SDEs, τ for CPS (what the Flow-GRPO KL divides by)
    tau: torch.Tensor  # [B], std of the transition


def _per_sample(values: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    return values.reshape(-1, *([1] * (like.dim() - 1)))


def diffusion_coefficient(kind: SdeKind, sigmas: torch.Tensor, i: torch.Tensor, level: float) -> torch.Tensor:
    """g_i per sample for the Gaussian samplers (§2.2), in fp64."""
    s = sigmas[i]
    if kind == "flow_grpo":
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
    sigmas: torch.Tensor,
    kind: SdeKind,
    level: float,
    x_next: torch.Tensor | None = None,
    noise: torch.Tensor | None = None,
) -> StepOutput:
    """One stochastic transition x_i → x_{i+1}; with ``x_next`` given, only its log-prob.

    ``noise`` (standard normal, shape of x) is used when ``x_next`` is None.
    """
    v, x = velocity.float(), x.float()
    s64, s164 = sigmas[i], sigmas[i + 1]
    s, s1, d = (_per_sample(t.float(), x) for t in (s64, s164, s164 - s64))
    if kind == "cps":
        tau = s1 * math.sin(level * math.pi / 2)
        mean = (1 - s1) * (x - s * v) + torch.sqrt(s1**2 - tau**2) * (x + (1 - s) * v)
        kl_std = tau
    else:
        g = _per_sample(diffusion_coefficient(kind, sigmas, i, level).float(), x)
        mean = x * (1 + g * g * d / (2 * s)) + v * d * (1 + g * g * (1 - s) / (2 * s))
        tau = g * torch.sqrt(-d)
        kl_std = g
    if x_next is None:
        if noise is None:
            raise ValueError("sde_step needs either x_next or noise")
        x_next = mean + tau * noise.float()
    x_next = x_next.float()
    if kind == "cps":
        log_prob = -((x_next.detach() - mean) ** 2)
    else:
        log_prob = -((x_next.detach() - mean) ** 2) / (2 * tau**2) - torch.log(tau) - 0.5 * math.log(2 * math.pi)
    reduce_dims = tuple(range(1, x.dim()))
    return StepOutput(
        next=x_next,
        log_prob=log_prob.mean(dim=reduce_dims),
        mean=mean,
        kl_std=kl_std.reshape(-1),
        tau=tau.reshape(-1),
    )


def ode_step(velocity: torch.Tensor, x: torch.Tensor, i: torch.Tensor, sigmas: torch.Tensor) -> torch.Tensor:
    """The Euler step x + Δ v (g = 0); it has no log-prob."""
    d = _per_sample((sigmas[i + 1] - sigmas[i]).float(), x)
    return x.float() + d * velocity.float()
