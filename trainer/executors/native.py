"""``native``: the reference schedule (docs/executors.md §2).

Roll out under ``no_grad``; score and form advantages; then, for each inner epoch, re-forward
every trained step with grad over the whole local batch (one micro-batch, the rollout's own
shape, so the first ratio is exactly 1), scale by 1/K and backward at once (freeing the graph);
synchronise gradients once per cycle (coalesced), clip and step.
"""

from __future__ import annotations

import torch

from trainer.executors.base import Executor, StepResult
from trainer.executors.recompute import recompute_update
from trainer.executors.step_report import StepReport
from trainer.layout import SampleBatch
from trainer.spec import NativeOptions
from trainer.timing import device_seconds


class NativeExecutor(Executor):
    options_model = NativeOptions
    exactness_class = "E0"  # the reference itself

    def train_step(self, batch: SampleBatch) -> StepResult:
        job = self.job
        started = device_seconds(job.dist.device)
        report = StepReport(job.collectives)
        plan = job.plan(batch)
        with torch.no_grad(), job.sampling_weights(batch.step):
            trajectory = job.rollout(batch, plan)
        rolled = device_seconds(job.dist.device)
        scores = job.score(trajectory, batch)
        advantages, stats, rewards = job.advantages(scores, batch)
        scored = device_seconds(job.dist.device)

        sync_seconds = sum(
            recompute_update(job, trajectory, plan, advantages, report) for _ in range(job.spec.algorithm.inner_epochs)
        )
        job.follow_old_policy(batch.step)
        finished = device_seconds(job.dist.device)
        times = {
            "rollout": rolled - started,
            "reward": scored - rolled,
            "train": finished - scored,
            "sync": sync_seconds,
        }
        metrics = report.metrics(times, {})
        return StepResult(metrics, trajectory, scores, stats, rewards)
