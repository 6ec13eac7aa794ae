"""MixGRPO-Flash (docs/algorithms.md §3.6): MixGRPO's window, and after it DPM-Solver++ (2M) on a shorter grid.

The steps before and inside the window are MixGRPO's (Euler, then Flow-GRPO's SDE, trained); the plan's
``tail`` hands the rest of the trajectory to the solver of ``trainer/sampling/dpm_solver.py`` on
⌊(T − a)·r⌋ points from σ_{a+1} to 0 (a the window's last step, r = ``ode_compression``), as MixGRPO's
``run_sample_step`` does with ``dpm_apply_strategy="post"``.
"""

from __future__ import annotations

from dataclasses import replace

from trainer.algorithms.base import StepPlan
from trainer.algorithms.mix_grpo import MixGRPO, window_start
from trainer.distributed import Distributed
from trainer.layout import SampleBatch
from trainer.sampling.dpm_solver import OdeTail, tail_sigmas


class MixGRPOFlash(MixGRPO):
    def plan(self, batch: SampleBatch, dist: Distributed) -> StepPlan:
        plan = super().plan(batch, dist)
        window_end = window_start(self.spec, batch.step, self.seed) + self.trained_count - 1
        compression: float = self.spec.ode_compression  # type: ignore[assignment]
        return replace(plan, tail=OdeTail(window_end + 1, tail_sigmas(self.sigmas, window_end, compression)))
