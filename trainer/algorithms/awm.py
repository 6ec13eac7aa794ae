"""AWM, Advantage Weighted Matching (docs/algorithms.md §7.3): the flow-matching loss as a log-likelihood,
weighted by the advantage through the PPO-clipped ratio to the old policy.

Follows X-GenGroup/Flow-Factory src/flow_factory/trainers/awm.py (``compute_weighted_log_prob`` and the
clipped loss of ``optimize``); the old policy is the weights at the step's start (on-policy).
"""

from __future__ import annotations

import torch

from trainer.algorithms.forward import ForwardAlgorithm, ForwardInputs, ForwardTerms
from trainer.spec.forward_family import GHUBER_POWER


def weighted_log_prob(
    velocity: torch.Tensor, target: torch.Tensor, sigma: torch.Tensor, weighting: str, power: float = GHUBER_POWER
) -> torch.Tensor:
    """[B] −mean (v − (ε − x_0))² in fp64, reweighted over σ: uniform, t (·σ), t2 (·σ²), huber
    (−(√(−ℓ + 1e-10) − 1e-5) σ) or ghuber (−((−ℓ + ε)^p − ε^p) σ / p, ε = 1e-10); returned in fp32."""
    error = (velocity.double() - target.double()) ** 2
    log_prob = -error.mean(dim=tuple(range(1, error.dim())))
    t = sigma.double()
    if weighting == "t":
        log_prob = log_prob * t
    elif weighting == "t2":
        log_prob = log_prob * t**2
    elif weighting == "huber":
        log_prob = -(torch.sqrt(-log_prob + 1e-10) - 1e-5) * t
    elif weighting == "ghuber":
        eps = torch.tensor(1e-10, dtype=log_prob.dtype, device=log_prob.device)
        log_prob = -(torch.pow(-log_prob + eps, power) - torch.pow(eps, power)) * t / power
    return log_prob.float()


def awm_loss(
    log_prob: torch.Tensor, old_log_prob: torch.Tensor, advantages: torch.Tensor, clip_range: float, adv_clip: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """mean_b max(−A ρ, −A clip(ρ, 1 ± ε)) with ρ = exp(ℓ_θ − ℓ_old) and A clipped to ±c; also ρ."""
    advantage = advantages.clamp(-adv_clip, adv_clip)
    ratio = torch.exp(log_prob - old_log_prob)
    unclipped = -advantage * ratio
    clipped = -advantage * torch.clamp(ratio, 1.0 - clip_range, 1.0 + clip_range)
    return torch.mean(torch.maximum(unclipped, clipped)), ratio


class AWM(ForwardAlgorithm):
    def loss(self, inputs: ForwardInputs) -> ForwardTerms:
        assert inputs.old is not None
        spec, renoised = self.spec, inputs.renoised
        weighting: str = spec.awm_weighting  # type: ignore[assignment]
        clip_range: float = spec.clip_range  # type: ignore[assignment]
        log_prob = weighted_log_prob(inputs.velocity, renoised.target, renoised.sigma, weighting)
        old = weighted_log_prob(inputs.old, renoised.target, renoised.sigma, weighting)
        loss, ratio = awm_loss(log_prob, old, inputs.advantages, clip_range, spec.adv_clip)
        ratio = ratio.detach()
        return ForwardTerms(loss, ratio, (ratio - 1).abs() > clip_range)
