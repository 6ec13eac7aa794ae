"""Flow-GRPO-Fast, window version (docs/algorithms.md §3.2): an SDE window of w steps, ODE elsewhere; K = w.

The window start is drawn uniformly from ``window_range`` = [r0, r1) with a step-seeded
generator, so it is the same on every rank (the reference shares it per rank only) and the
same on a resumed run. The spec guarantees the window never reaches the last step.
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.seeding import step_generator


class FlowGRPOFast(Algorithm):
    gaussian_kind = "flow_grpo"

    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan:
        size: int = self.spec.window_size  # type: ignore[assignment]
        low, high = self.spec.window_range  # type: ignore[misc]
        start = int(torch.randint(low, high, (1,), generator=step_generator(self.seed, batch.step, "window")))
        rows = len(batch.prompts)
        sde = torch.zeros(rows, self.steps, dtype=torch.bool)
        sde[:, start : start + size] = True
        trained = torch.arange(start, start + size).expand(rows, -1).clone()
        return StepPlan(sde, trained)
