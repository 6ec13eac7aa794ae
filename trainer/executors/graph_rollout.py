"""The rollout the Lean executors run: the rows that train at a step forwarded *with grad*, the rest without.

It reproduces ``trainer.rollout.rollout`` operation for operation (same per-sample noise streams,
same step math), so a graph kept from it is the graph native's re-forward would build (docs/executors.md
§2). Only rows that train at step i carry a graph there: where some rows train
and others do not (DanceGRPO's and Flash-GRPO's per-sample steps), the step runs as two forwards, the
training rows with grad and the others without, so the backward later touches exactly the rows
native's re-forwards do. When every row trains at the same steps (Flow-GRPO) the batch shape is the
rollout's own. A caller that needs the graphs of some trained (row, step) pairs only (JAGG's composed executors:
a routed group's interior steps need only their velocity) passes ``graphs``; the trained rows without one are
forwarded without grad as a third partial batch and handed over too, with ``kept`` False. The next latent is
always detached, so graphs never chain across steps. In replay mode
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
from trainer.rollout import Trajectory, sample_noise, sde_log_probs
from trainer.sampling.dpm_solver import OdeTail
from trainer.sampling.noise import SampleNoise
from trainer.sampling.sde_step import StepOutput


@dataclass
class TrainedForward:
    """One rollout step's with-grad forward over the rows that train there."""

    step: int
    rows: list[int]  # positions, in the rows rolled out together, of the forward's rows
    out: StepOutput  # log_prob [len(rows)] and mean carry the graph
    reference_mean: torch.Tensor | None  # no-grad μ_ref when kl_beta > 0
    x: torch.Tensor  # the step's input latents of these rows (detached)
    kept: bool = True  # whether ``out`` carries the graph


def reference_mean(
    job: TrainingJob,
    x: torch.Tensor,
    index: torch.Tensor,
    cond: Conditioning,
    uncond: Conditioning | None,
    x_next: torch.Tensor,
) -> torch.Tensor:
    """μ_ref of the same step under the reference weights (``TrainingJob.reference_weights``)."""
    with torch.no_grad(), job.reference_weights() as reference:
        return job.denoiser.toward(reference, x, index, cond, uncond, x_next).mean


def rollout_with_graphs(
    job: TrainingJob,
    batch: SampleBatch,
    plan: StepPlan,
    rows: list[int],
    on_trained: Callable[[TrainedForward], None],
    graphs: torch.Tensor | None = None,
) -> Trajectory:
    """Roll out ``rows`` of the batch together; hand each trained step's forward to ``on_trained``. ``graphs``
    ([len(rows), steps] bool, on the host): the trained (row, step) pairs forwarded with grad (default: all)."""
    family, algorithm, device = job.family, job.algorithm, job.dist.device
    selected = torch.tensor(rows, dtype=torch.long)
    on_device = selected.to(device)
    prompts = [batch.prompts[r] for r in rows]
    cond, uncond = job.conditioning(prompts), job.unconditional(prompts)
    sde, trained = plan.sde[selected], plan.trained[selected]
    replay = job.replay.trajectory if job.replay is not None else None
    noise = sample_noise(algorithm, batch.step, [int(batch.sample_ids[r]) for r in rows], device)
    x = noise.initial(family.latent_shape) if replay is None else replay.latents[on_device, 0]
    latents = [x]
    log_probs = torch.empty((len(rows), algorithm.steps), device=device)
    everyone = list(range(len(rows)))
    tail, estimate = plan.tail, torch.empty_like(x)
    for i in range(algorithm.steps):
        if tail is not None and i == tail.start:  # MixGRPO-Flash's solver: no row trains past the window
            if replay is not None:
                latents.extend(replay.latents[on_device, i + 1 :].unbind(dim=1))
                break
            with torch.no_grad():
                x = job.denoiser.finish(job.policy, x, estimate, tail, cond, uncond)
            latents.extend([x] * (algorithm.steps - i))
            break
        training = (trained == i).any(dim=1)
        kept = training if graphs is None else training & graphs[:, i]
        split = [
            [r for r in everyone if bool(kept[r])],
            [r for r in everyone if bool(training[r]) and not kept[r]],
            [r for r in everyone if not training[r]],
        ]
        x_next = torch.empty_like(x)
        for part, with_grad, handed in zip(split, (True, False, False), (True, True, False), strict=True):
            if not part:
                continue
            index = torch.tensor(part, dtype=torch.long, device=device)
            part_cond, part_uncond = cond.index(index), None if uncond is None else uncond.index(index)
            stored = None if replay is None else replay.latents[on_device[index], i + 1]
            with torch.set_grad_enabled(with_grad):
                step_next, out = step_rows(
                    job, x[index], i, sde[part, i].tolist(), noise.subset(part), part_cond, part_uncond, stored
                )
            log_probs[index, i] = out.log_prob.detach()
            x_next[index] = step_next.detach()
            if tail is not None and i == tail.start - 1:
                estimate[index] = OdeTail.estimate(x[index], out.velocity.detach(), float(tail.sigmas[0]))
            if handed:
                reference = None
                if job.spec.algorithm.kl_beta > 0:
                    steps = job.denoiser.grid.index(i, len(part))
                    reference = reference_mean(job, x[index], steps, part_cond, part_uncond, x_next[index])
                on_trained(TrainedForward(i, part, out, reference, x[index], with_grad))
        x = x_next
        latents.append(x)
    stacked = torch.stack(latents, dim=1)
    if replay is not None:  # the frozen old log-probs, as native's ratio sees them (its rollout's batch shape)
        return Trajectory(stacked, replay.log_probs[on_device], cond, uncond, replay.images[on_device])
    return Trajectory(stacked, sde_log_probs(log_probs, sde), cond, uncond, family.decode(stacked[:, -1]))


def step_rows(
    job: TrainingJob,
    x: torch.Tensor,
    step: int,
    stochastic: list[bool],
    noise: SampleNoise,
    cond: Conditioning,
    uncond: Conditioning | None,
    stored_next: torch.Tensor | None,
) -> tuple[torch.Tensor, StepOutput]:
    """x_i → x_{i+1} for some rows, under the caller's grad mode: the rollout's own step, or in replay
    mode the step toward the stored x_{i+1}."""
    if stored_next is None:
        return job.denoiser.sample(job.policy, x, step, stochastic, noise, cond, uncond)
    index = job.denoiser.grid.index(step, x.shape[0])
    return stored_next, job.denoiser.toward(job.policy, x, index, cond, uncond, stored_next)
