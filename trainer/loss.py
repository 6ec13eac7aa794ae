"""The PPO-clip surrogate and the KL term to the reference model, per trained step (docs/algorithms.md §5).

Both return the mean over the batch rows they are given; the executor divides by K (and DDP
averages over ranks), which gives the 1/(NK) normalisation of §5.1.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass
class PolicyTerms:
    loss: torch.Tensor  # scalar, differentiable
    ratio: torch.Tensor  # [B], detached
    clipped: torch.Tensor  # [B] bool, where the clip was active


def clipped_policy_loss(
    log_prob: torch.Tensor,
    old_log_prob: torch.Tensor,
    advantages: torch.Tensor,
    clip_range: float,
    weights: torch.Tensor | None = None,
) -> PolicyTerms:
    """mean_b max(−A ρ, −A clip(ρ, 1 ± ε)), with optional positive per-sample weights w (Flash-GRPO)."""
    ratio = torch.exp(log_prob - old_log_prob)
    advantage = advantages if weights is None else advantages * weights
    unclipped = -advantage * ratio
    clipped = -advantage * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)
    loss = torch.maximum(unclipped, clipped).mean()
    active = (ratio.detach() - 1).abs() > clip_range
    return PolicyTerms(loss, ratio.detach(), active)


def reference_kl(mean: torch.Tensor, reference_mean: torch.Tensor, kl_std: torch.Tensor) -> torch.Tensor:
    """mean_b [ mean_elements (μ_θ − μ_ref)² / (2 s²) ], s per row: the step's g for Flow-GRPO's form, its
    std τ for the exact KL (``Algorithm.kl_std`` picks it from ``algorithm.kl_form``)."""
    dims = tuple(range(1, mean.dim()))
    return (((mean - reference_mean) ** 2).mean(dim=dims) / (2 * kl_std**2)).mean()
