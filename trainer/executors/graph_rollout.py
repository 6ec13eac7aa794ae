"""The rollout the Lean executors run: the rows that train at a step forwarded *with grad*, the rest without.

It reproduces ``trainer.rollout.rollout`` operation for operation (same per-sample noise streams,
same step math), so a graph kept from it is the graph native's re-forward would build (docs/executors.md
§2). Only rows that train at step i carry a graph there: where some rows train
and others do not (DanceGRPO's and Flash-GRPO's per-sample steps), the step runs as two forwards, the
training rows with grad and the others without, so the backward later touches exactly the rows
native's re-forwards do. When every row trains at the same steps (Flow-GRPO) the batch shape is the
rollout's own. The next latent is always detached, so graphs never chain across steps. In replay mode
(``job.replay``) the stored x_{i+1} is passed as ``x_next`` instead of drawing noise, and the stored
log-probs are the old ones (docs/executors.md §4).
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
    """One rollout step's with-grad forward over the rows that train there."""

    step: int
    rows: list[int]  # positions, in the rows rolled out together, of the forward's rows
    out: StepOutput  # log_prob [len(rows)] and mean carry the graph
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
    family, algorithm = job.family, job.algorithm
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
    everyone = list(range(len(rows)))
    for i in range(algorithm.steps):
        training = (trained == i).any(dim=1)
        split = [[r for r in everyone if bool(training[r])], [r for r in everyone if not training[r]]]
        x_next = torch.empty_like(x)
        for part, with_grad in zip(split, (True, False), strict=True):
            if not part:
                continue
            index = torch.tensor(part, dtype=torch.long)
            part_cond, part_uncond = cond.index(index), None if uncond is None else uncond.index(index)
            stored = None if replay is None else replay.latents[selected[index], i + 1]
            with torch.set_grad_enabled(with_grad):
                step_next, out = step_rows(
                    job, x[index], i, sde[index, i], [generators[r] for r in part], part_cond, part_uncond, stored
                )
            stochastic = sde[index, i].to(device)
            log_probs[index, i] = torch.where(stochastic, out.log_prob.detach(), log_probs[index, i])
            x_next[index] = step_next.detach()
            if with_grad:
                reference = None
                if job.spec.algorithm.kl_beta > 0:
                    steps = torch.full((len(part),), i, dtype=torch.long)
                    reference = reference_mean(job, x[index], steps, part_cond, part_uncond, x_next[index])
                on_trained(TrainedForward(i, part, out, reference))
        x = x_next
        latents.append(x)
    stacked = torch.stack(latents, dim=1)
    if replay is not None:  # the frozen old log-probs, as native's ratio sees them (its rollout's batch shape)
        return Trajectory(stacked, replay.log_probs[selected], cond, uncond, replay.images[selected])
    return Trajectory(stacked, log_probs, cond, uncond, family.decode(stacked[:, -1]))


def step_rows(
    job: TrainingJob,
    x: torch.Tensor,
    step: int,
    stochastic: torch.Tensor,
    generators: list[torch.Generator],
    cond: Conditioning,
    uncond: Conditioning | None,
    stored_next: torch.Tensor | None,
) -> tuple[torch.Tensor, StepOutput]:
    """x_i → x_{i+1} for some rows, under the caller's grad mode: the rollout's own step, or in replay
    mode the step toward the stored x_{i+1}."""
    family, algorithm, cfg = job.family, job.algorithm, job.spec.algorithm.cfg_scale
    if stored_next is None:
        return denoise_step(family, job.policy, algorithm, x, step, stochastic, generators, cond, uncond, cfg)
    index = torch.full((x.shape[0],), step, dtype=torch.long)
    sigma = algorithm.sigmas[index].float().to(x.device)
    velocity = family.velocity(job.policy, x, sigma, cond, uncond, cfg)
    out = sde_step(velocity, x, index, algorithm.sigmas, algorithm.sde_kind, algorithm.level, stored_next)
    return stored_next, out
