"""DiffusionNFT (docs/algorithms.md §7.2): the implicit positive and negative policies v_old ± β (v_θ − v_old),
each matched to the clean sample with an adaptive x_0 weight and mixed by the optimality probability r.

Follows NVlabs/DiffusionNFT scripts/train_nft_sd3.py (the loss block of its timestep loop); rollouts sample
with the old policy, which follows the weights with decay min(0.001 · step, 0.5) (config/nft.py decay_type 1).
"""

from __future__ import annotations

import torch

from trainer.algorithms.forward import ForwardAlgorithm, ForwardInputs, ForwardTerms


def nft_loss(
    velocity: torch.Tensor,
    old: torch.Tensor,
    noised: torch.Tensor,
    clean: torch.Tensor,
    sigma: torch.Tensor,
    advantages: torch.Tensor,
    beta: float,
    adv_clip: float,
) -> torch.Tensor:
    """mean_b c · [r ℓ⁺ + (1 − r) ℓ⁻] / β with r = clip(A, ±c) / 2c + ½ and ℓ± the adaptively weighted x_0 errors
    of the implicit policies (their weight |x̂_0 − x_0| averaged per row, in fp64, no grad, at least 1e-5)."""
    dims = tuple(range(1, clean.dim()))
    sigma = sigma.reshape(-1, *([1] * len(dims)))
    r = (advantages.clamp(-adv_clip, adv_clip) / adv_clip / 2.0 + 0.5).clamp(0, 1)
    positive = beta * velocity + (1 - beta) * old
    negative = (1.0 + beta) * old - beta * velocity

    def matched(prediction: torch.Tensor) -> torch.Tensor:
        x0 = noised - sigma * prediction
        with torch.no_grad():
            weight = (x0.double() - clean.double()).abs().mean(dim=dims, keepdim=True).clip(min=1e-5)
        return ((x0 - clean) ** 2 / weight).mean(dim=dims)

    per_row = r * matched(positive) / beta + (1.0 - r) * matched(negative) / beta
    return (per_row * adv_clip).mean()


class DiffusionNFT(ForwardAlgorithm):
    def loss(self, inputs: ForwardInputs) -> ForwardTerms:
        assert inputs.old is not None
        spec, renoised = self.spec, inputs.renoised
        beta: float = spec.nft_beta  # type: ignore[assignment]
        loss = nft_loss(
            inputs.velocity,
            inputs.old,
            renoised.noised,
            renoised.clean,
            renoised.sigma,
            inputs.advantages,
            beta,
            spec.adv_clip,
        )
        rows = inputs.advantages.shape[0]
        device = inputs.velocity.device
        return ForwardTerms(loss, torch.ones(rows, device=device), torch.zeros(rows, dtype=torch.bool, device=device))
