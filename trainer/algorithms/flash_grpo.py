"""Flash-GRPO (docs/algorithms.md §3.4): one iso-temporal SDE step per prompt, ODE elsewhere, K = 1, 1/c weights.

Rank 0 draws a step k_p from the first ``candidate_steps`` steps for every prompt group and
broadcasts the map, so every member of a group, on any rank, is perturbed and trained at the
same noise level. The loss weight of a sample is (1/c_k) / mean(1/c), with c = |h|/τ computed
from this run's own σ vector (never a table), the mean taken over the rank's batch and then
averaged across ranks, as the reference does.
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.sampling.sde_step import score_factor
from trainer.seeding import step_generator


class FlashGRPO(Algorithm):
    gaussian_kind = "flash"

    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan:
        groups = batch.global_size // self.spec.group_size
        candidates: int = self.spec.candidate_steps  # type: ignore[assignment]
        steps = torch.randint(candidates, (groups,), generator=step_generator(self.seed, batch.step, "flash-step"))
        steps = dist.broadcast(steps.to(dist.device)).cpu()
        local = steps[batch.group_ids]
        rows = len(batch.prompts)
        sde = torch.zeros(rows, self.steps, dtype=torch.bool)
        sde[torch.arange(rows), local] = True
        inverse_c = 1 / score_factor("flash", self.sigmas, local, self.level)
        normaliser = dist.all_reduce_mean(inverse_c.mean().to(dist.device)).cpu()
        return StepPlan(sde, local.unsqueeze(1), (inverse_c / normaliser).float())
