"""Time-step parallel replay (TSP, docs/executors.md §2): digenrl's trainer replays one unit's K trained
steps as batched forwards/backwards of up to ``executor.timestep_batch`` rows instead of K sequential
ones. The loss is native's clipped surrogate with ρ = exp(ℓ_θ − ℓ_old) against the *generating*
policy's log-prob (+ β·KL against the reference), each batch scaled by rows/(NK), so the trainer pool's
summed gradient is native's up to the batched kernels' rounding (class E1).
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.step_report import StepReport
from trainer.executors.units import Unit
from trainer.job import StepTerms, TrainingJob
from trainer.layout import SampleBatch
from trainer.loss import clipped_policy_loss, reference_kl
from trainer.models.base import Conditioning
from trainer.rollout import Trajectory
from trainer.sampling.sde_step import sde_step
from trainer.spec import DigenrlOptions


def replay_unit(
    job: TrainingJob,
    options: DigenrlOptions,
    unit: Unit,
    advantage: float,
    plan: StepPlan,
    batch: SampleBatch,
    total: int,
    report: StepReport,
) -> list[torch.Tensor]:
    """Backward the unit's trained steps into ``.grad``, batch by batch; returns each batch's clip mask."""
    spec, algorithm = job.spec.algorithm, job.algorithm
    steps = plan.trained[unit.sample_id]
    trained = len(steps)
    width = options.timestep_batch or trained
    prompt = batch.prompts[unit.sample_id]
    weight = 1.0 if plan.weights is None else float(plan.weights[unit.sample_id])
    device = job.dist.device
    latents, log_probs = unit.latents.to(device), unit.log_probs.to(device)  # one copy of the unit per replay
    clipped: list[torch.Tensor] = []
    for start in range(0, trained, width):
        index = steps[start : start + width].to(device)
        rows = len(index)
        x, x_next = latents[index], latents[index + 1]
        cond = job.conditioning([prompt] * rows)
        uncond = job.unconditional([prompt] * rows)
        out = job.denoiser.toward(job.policy, x, index, cond, uncond, x_next)
        old = log_probs[index]
        advantages = torch.full((rows,), advantage, device=device)
        weights = None if plan.weights is None else torch.full((rows,), weight, device=device)
        terms = clipped_policy_loss(out.log_prob, old, advantages, spec.clip_range, weights)
        kl = None
        if spec.kl_beta > 0:
            reference = reference_mean(job, x, index, cond, uncond, x_next)
            kl = reference_kl(out.mean, reference, algorithm.kl_std(out))
        step_terms = StepTerms.of(out.log_prob, old, terms, kl, spec.kl_beta)
        (step_terms.loss * rows / (total * trained)).backward()
        report.add(step_terms)
        clipped.append(terms.clipped)
    return clipped


def reference_mean(
    job: TrainingJob,
    x: torch.Tensor,
    index: torch.Tensor,
    cond: Conditioning,
    uncond: Conditioning | None,
    x_next: torch.Tensor,
) -> torch.Tensor:
    """μ_ref of the replayed steps under the reference weights (no grad)."""
    carrier = Trajectory(x, torch.empty(0), cond, uncond, torch.empty(0))
    with torch.no_grad():
        velocity = job.reference_velocity(x, index, carrier)
        return sde_step(velocity, x, index, job.denoiser.grid, x_next).mean
