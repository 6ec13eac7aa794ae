"""DGPO, Direct Group Preference Optimization (docs/algorithms.md §7.4): each sample's denoising loss against
the frozen reference's, summed over its prompt group into a DPO-style preference whose sigmoid weights the
advantage-weighted loss; the loss is frozen where its ratio to the old (EMA) policy leaves 1 ± ε.

Follows Luo-Yihong/DGPO and its port X-GenGroup/Flow-Factory src/flow_factory/trainers/dgpo.py
(``_maybe_clip_dsm``, ``_compute_group_dgpo_loss``): a group's members share one noise at every time,
the old policy follows the weights with decay min(0.001 · step, 0.3) and samples from step 201 on.
"""

from __future__ import annotations

import torch

from trainer.algorithms.forward import ForwardAlgorithm, ForwardInputs, ForwardTerms


def denoising_loss(target: torch.Tensor, velocity: torch.Tensor) -> torch.Tensor:
    """[B] mean (ε − x_0 − v)² per row, reduced in fp64: β = 100 magnifies the difference to the reference's."""
    return (target.double() - velocity.double()).square().reshape(target.shape[0], -1).mean(dim=1)


def clipped_denoising_loss(
    dsm: torch.Tensor, old_dsm: torch.Tensor, advantages: torch.Tensor, clip_range: float
) -> tuple[torch.Tensor, torch.Tensor]:
    """The loss with no gradient where ρ = exp(ℓ_old − ℓ_θ) passes 1 + ε (A > 0) or 1 − ε (A ≤ 0); and that mask."""
    ratio = torch.exp(-dsm.detach() + old_dsm)
    clip = torch.where(advantages > 0, ratio > 1.0 + clip_range, ratio < 1.0 - clip_range)
    return torch.where(clip, dsm.detach(), dsm), clip


def group_preference_loss(dsm: torch.Tensor, group_sums: torch.Tensor, advantages: torch.Tensor) -> torch.Tensor:
    """mean_b σ(s_g(b)) · A_b · ℓ_b, the sigmoid weight detached."""
    return (torch.sigmoid(group_sums).detach() * advantages * dsm).mean()


def preference_terms(
    dsm: torch.Tensor, ref_dsm: torch.Tensor, advantages: torch.Tensor, dpo_beta: float, group_size: int
) -> torch.Tensor:
    """[B] each sample's part of its group's sum: A · β · (ℓ_θ − ℓ_ref) / G (detached)."""
    return advantages * dpo_beta * (dsm.detach() - ref_dsm) / group_size


class DGPO(ForwardAlgorithm):
    uses_reference = True
    shares_noise_in_group = True

    def loss(self, inputs: ForwardInputs) -> ForwardTerms:
        assert inputs.old is not None and inputs.reference is not None
        spec, target = self.spec, inputs.renoised.target
        clip_range: float = spec.clip_range  # type: ignore[assignment]
        dpo_beta: float = spec.dpo_beta  # type: ignore[assignment]
        advantages = inputs.advantages.clamp(-spec.adv_clip, spec.adv_clip)
        dsm = denoising_loss(target, inputs.velocity)
        with torch.no_grad():
            ref_dsm = denoising_loss(target, inputs.reference)
            old_dsm = denoising_loss(target, inputs.old)
        dsm, clipped = clipped_denoising_loss(dsm, old_dsm, advantages, clip_range)
        terms = preference_terms(dsm, ref_dsm, advantages, dpo_beta, spec.group_size)
        sums = self.group_sums(terms, inputs)
        loss = group_preference_loss(dsm, sums, advantages)
        return ForwardTerms(loss, torch.exp(old_dsm - dsm.detach()), clipped)

    @staticmethod
    def group_sums(terms: torch.Tensor, inputs: ForwardInputs) -> torch.Tensor:
        """[B] each local row's group sum over every rank: a group is the rows that share the time's noise seed."""
        keys = inputs.noise_seeds.to(terms.device)
        every_key, every_term = inputs.dist.all_gather(keys), inputs.dist.all_gather(terms.detach())
        groups, inverse = torch.unique(every_key, return_inverse=True)
        sums = torch.zeros(len(groups), dtype=terms.dtype, device=terms.device).index_add_(0, inverse, every_term)
        return sums[torch.searchsorted(groups, keys)]
