"""Native's update over a stored trajectory: re-forward every trained step with grad over the local batch,
scale by 1/K and backward each at once, synchronise once, clip and step. ``native`` runs it for every
inner epoch; the Lean executors with ``executor.after_first_update: native`` (the hybrid schedule) for
every epoch after their first, once the weights have moved and the rollout's graphs no longer hold."""

from __future__ import annotations

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.step_report import StepReport
from trainer.job import TrainingJob
from trainer.rollout import Trajectory
from trainer.timing import device_seconds


def recompute_gradients(
    job: TrainingJob, trajectory: Trajectory, plan: StepPlan, advantages: torch.Tensor, report: StepReport | None
) -> None:
    """Native's gradient of the local rows, accumulated into ``.grad`` (lean_reweight's native fallback
    calls it alone); each trained step's terms go to `report` when given."""
    trained = plan.trained.shape[1]
    for position in range(trained):
        terms = job.trained_step(trajectory, plan, position, advantages)
        job.backward(terms.loss / trained)
        if report is not None:
            report.add(terms)


def recompute_update(
    job: TrainingJob, trajectory: Trajectory, plan: StepPlan, advantages: torch.Tensor, report: StepReport
) -> float:
    """One optimizer step; returns the seconds spent synchronising gradients."""
    recompute_gradients(job, trajectory, plan, advantages, report)
    began = device_seconds(job.dist.device)
    job.synchronize_gradients()
    seconds = device_seconds(job.dist.device) - began
    report.close_update(job.optimizer_step())
    return seconds
