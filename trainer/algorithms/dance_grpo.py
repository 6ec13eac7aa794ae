"""DanceGRPO (docs/algorithms.md §3.3): η-SDE at every step; each sample trains its own random K of the first T − 1
steps (the last transition is always dropped), in the permuted order.

Permutations are drawn per global sample id from a step-seeded generator, so they do not
depend on how samples are laid out on ranks.
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.seeding import step_generator


class DanceGRPO(Algorithm):
    gaussian_kind = "dance"

    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan:
        generator = step_generator(self.seed, batch.step, "dance-permutation")
        draws = [torch.randperm(self.steps - 1, generator=generator) for _ in range(batch.global_size)]
        permutations = torch.stack(draws)
        trained = permutations[batch.sample_ids, : self.trained_count]
        sde = torch.ones(len(batch.prompts), self.steps, dtype=torch.bool)
        return StepPlan(sde, trained)
