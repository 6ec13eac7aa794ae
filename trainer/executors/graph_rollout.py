"""The rollout the Lean executors run: trained steps forwarded *with grad*, the rest without.

It reproduces ``trainer.rollout.rollout`` operation for operation (same per-sample noise
streams, same batch shape for the rows given, same step math), so a graph kept from it is the
graph native's re-forward would build (executors.md §2, "redundant recompute"). The next
latent is always detached, so graphs never chain across steps. In replay mode
(``job.replay``) the stored x_{i+1} is passed as ``x_next`` instead of drawing noise (§6.1).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch

from trainer.algorithms.base import StepPlan
from trainer.job import TrainingJob
from trainer.layout import SampleBatch
from trainer.models.base import Conditioning
from trainer.rollout import Trajectory, denoise_step, initial_noise
from trainer.sampling.sde_step import StepOutput, sde_step
from trainer.seeding import sample_generator


@dataclass
class TrainedForward:
    """One rollout step's with-grad forward over the rows rolled out together."""

    step: int
    out: StepOutput  # log_prob [rows] and mean carry the graph
    reference_mean: torch.Tensor | None  # no-grad μ_ref when kl_beta > 0


def reference_mean(
    job: TrainingJob,
    x: torch.Tensor,
    index: torch.Tensor,
    cond: Conditioning,
    uncond: Conditioning | None,
    x_next: torch.Tensor,
) -> torch.Tensor:
    """μ_ref of the same step under the reference weights (frozen copy, or LoRA disabled)."""
    algorithm, cfg = job.algorithm, job.spec.algorithm.cfg_scale
    sigma = algorithm.sigmas[index].float().to(x.device)
    with torch.no_grad():
        if job.reference is not None:
            velocity = job.family.velocity(job.reference, x, sigma, cond, uncond, cfg)
        else:
            with job.policy.disable_adapter():  # type: ignore[operator]
                velocity = job.family.velocity(job.policy, x, sigma, cond, uncond, cfg)
        return sde_step(velocity, x, index, algorithm.sigmas, algorithm.sde_kind, algorithm.level, x_next).mean


def rollout_with_graphs(
    job: TrainingJob, batch: SampleBatch, plan: StepPlan, rows: list[int], on_trained: Callable[[TrainedForward], None]
) -> Trajectory:
    """Roll out ``rows`` of the batch together; hand each trained step's forward to ``on_trained``."""
    family, algorithm, cfg = job.family, job.algorithm, job.spec.algorithm.cfg_scale
    selected = torch.tensor(rows, dtype=torch.long)
    cond = job.conditioning([batch.prompts[r] for r in rows])
    uncond = job.unconditional(len(rows))
    device = cond.hidden.device
    sde, trained = plan.sde[selected], plan.trained[selected]
    replay = job.replay.trajectory if job.replay is not None else None
    generators = [sample_generator(algorithm.seed, batch.step, int(batch.sample_ids[r])) for r in rows]
    x = initial_noise(generators, family.latent_shape, device) if replay is None else replay.latents[selected, 0]
    latents = [x]
    log_probs = torch.full((len(rows), algorithm.steps), float("nan"), device=device)
    for i in range(algorithm.steps):
        stochastic = sde[:, i]
        with_grad = bool((trained == i).any())
        index = torch.full((len(rows),), i, dtype=torch.long)
        with torch.set_grad_enabled(with_grad):
            if replay is None:
                x_next, out = denoise_step(
                    family, job.policy, algorithm, x, i, stochastic, generators, cond, uncond, cfg
                )
            else:
                x_next = replay.latents[selected, i + 1]
                sigma = algorithm.sigmas[index].float().to(device)
                velocity = family.velocity(job.policy, x, sigma, cond, uncond, cfg)
                out = sde_step(velocity, x, index, algorithm.sigmas, algorithm.sde_kind, algorithm.level, x_next)
        log_probs[:, i] = torch.where(stochastic.to(device), out.log_prob.detach(), log_probs[:, i])
        x = x_next.detach()
        if with_grad:
            reference = None
            if job.spec.algorithm.kl_beta > 0:
                reference = reference_mean(job, latents[-1], index, cond, uncond, x)
            on_trained(TrainedForward(i, out, reference))
        latents.append(x)
    stacked = torch.stack(latents, dim=1)
    images = family.decode(stacked[:, -1]) if replay is None else replay.images[selected]
    return Trajectory(stacked, log_probs, cond, uncond, images)
