"""Flow-GRPO (docs/algorithms.md §3.1): SDE at every step; the first K steps trained, in time order.

The default K = T − 1 leaves out the near-clean last step, whose Gaussian is too peaked
to give a usable ratio; the spec refuses K ≥ T.
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.distributed import Distributed
from trainer.layout import SampleBatch


class FlowGRPO(Algorithm):
    gaussian_kind = "flow_grpo"

    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan:
        rows = len(batch.prompts)
        sde = torch.ones(rows, self.steps, dtype=torch.bool)
        trained = torch.arange(self.trained_count).expand(rows, -1).clone()
        return StepPlan(sde, trained)
