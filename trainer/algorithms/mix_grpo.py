"""MixGRPO (docs/algorithms.md §3.5): Flow-GRPO's SDE inside a sliding window of w steps, Euler ODE outside; K = w.

The window moves as MixGRPO's ``GRPOTrainingStates`` moves it: ``progressive`` starts at step 0 and
moves by ``window_stride`` every ``window_shift_interval`` optimizer steps, rolling back to 0 once it
would pass the last trainable step T − 3; ``random`` draws a start uniformly each step. The start is
a function of the step number and the job's seed, so it is the same on every rank and on a resumed run.
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.seeding import step_generator
from trainer.spec import AlgorithmSpec


def window_start(spec: AlgorithmSpec, step: int, seed: int) -> int:
    """The first SDE step of the window at optimizer step ``step`` (counted from 1)."""
    size: int = spec.window_size  # type: ignore[assignment]
    last_start = spec.sampling_steps - 2 - size  # upstream's window stays below max_timesteps = T − 2
    if spec.window_schedule == "random":
        generator = step_generator(seed, step, "mix-window")
        return int(torch.randint(0, last_start + 1, (1,), generator=generator))
    stride: int = spec.window_stride  # type: ignore[assignment]
    interval: int = spec.window_shift_interval  # type: ignore[assignment]
    positions = last_start // stride + 1
    return (max(step - 1, 0) // interval) % positions * stride


class MixGRPO(Algorithm):
    gaussian_kind = "flow_grpo"

    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan:
        start = window_start(self.spec, batch.step, self.seed)
        size = self.trained_count
        rows = len(batch.prompts)
        sde = torch.zeros(rows, self.steps, dtype=torch.bool)
        sde[:, start : start + size] = True
        trained = torch.arange(start, start + size).expand(rows, -1).clone()
        return StepPlan(sde, trained)
