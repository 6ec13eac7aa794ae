"""``native``: the reference schedule (executors.md §3.1).

Roll out under ``no_grad``; score and form advantages; then, for each inner epoch, re-forward
every trained step with grad over the whole local batch (one micro-batch, the rollout's own
shape, so the first ratio is exactly 1), scale by 1/K and backward at once (freeing the graph);
synchronise gradients once per cycle (coalesced), clip and step.
"""

from __future__ import annotations

import time

import torch

from trainer.executors.base import Executor, StepResult
from trainer.layout import SampleBatch


class NativeExecutor(Executor):
    name = "native"

    def train_step(self, batch: SampleBatch) -> StepResult:
        job = self.job
        started = time.perf_counter()
        plan = job.plan(batch)
        with torch.no_grad():
            trajectory = job.rollout(batch, plan)
        rolled = time.perf_counter()
        scores = job.score(trajectory, batch)
        advantages, stats, rewards = job.advantages(scores, batch)
        scored = time.perf_counter()

        trained = plan.trained.shape[1]
        losses, kls, approx_kls, ratios, clipped, grad_norms = [], [], [], [], [], []
        sync_seconds = 0.0
        for _ in range(job.spec.algorithm.inner_epochs):
            for position in range(trained):
                terms = job.trained_step(trajectory, plan, position, advantages)
                (terms.loss / trained).backward()
                losses.append(float(terms.loss.detach()))
                kls.append(terms.kl)
                approx_kls.append(terms.approx_kl)
                ratios.append(terms.ratio)
                clipped.append(terms.clipped)
            sync_started = time.perf_counter()
            job.synchronize_gradients()
            sync_seconds += time.perf_counter() - sync_started
            grad_norms.append(job.optimizer_step())
        finished = time.perf_counter()

        ratio = torch.cat(ratios)
        metrics = {
            "loss": sum(losses) / len(losses),
            "kl": sum(kls) / len(kls),
            "approx_kl": sum(approx_kls) / len(approx_kls),
            "clip_frac": float(torch.cat(clipped).float().mean()),
            "ratio/mean": float(ratio.mean()),
            "ratio/max_abs_dev": float((ratio - 1).abs().max()),
            "grad_norm": sum(grad_norms) / len(grad_norms),
            "time/rollout": rolled - started,
            "time/reward": scored - rolled,
            "time/train": finished - scored,
            "time/sync": sync_seconds,
        }
        return StepResult(metrics, trajectory, scores, stats, rewards)
