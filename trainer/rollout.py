"""Sampling trajectories: the SDE/ODE rollout that records latents and old log-probs, and
the pure-ODE sampler used for evaluation images.

These run under whatever grad mode the caller chose: the native executor rolls out under
``no_grad``; an executor that keeps rollout graphs steps with ``DenoisingStep.sample`` with grad on.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.models.base import Conditioning
from trainer.sampling.denoising_step import DenoisingStep
from trainer.sampling.dpm_solver import OdeTail
from trainer.sampling.noise import SampleNoise
from trainer.seeding import group_start_seed, sample_seed, stream_seed


@dataclass
class Trajectory:
    latents: torch.Tensor  # [B, T+1, *latent], fp32
    log_probs: torch.Tensor  # [B, T]; NaN at ODE steps, which have none
    cond: Conditioning
    uncond: Conditioning | None
    images: torch.Tensor  # [B, 3, H, W] in [0, 1]

    @staticmethod
    def cat(parts: list[Trajectory], cond: Conditioning, uncond: Conditioning | None) -> Trajectory:
        """Chunks rolled out one after another, as one trajectory over all their rows."""
        latents = torch.cat([p.latents for p in parts])
        log_probs = torch.cat([p.log_probs for p in parts])
        return Trajectory(latents, log_probs, cond, uncond, torch.cat([p.images for p in parts]))


def rollout(
    denoiser: DenoisingStep,
    module: nn.Module,
    plan: StepPlan,
    noise: SampleNoise,
    cond: Conditioning,
    uncond: Conditioning | None,
) -> Trajectory:
    """Every row from its own x_0 through the plan's SDE and ODE steps, on the conditioning's device; from
    ``plan.tail.start`` on, MixGRPO-Flash's solver (its end point recorded at every later index)."""
    x = noise.initial(denoiser.family.latent_shape)
    latents, log_probs = [x], []
    tail, estimate = plan.tail, None
    for i in range(denoiser.grid.steps):
        if tail is not None and i == tail.start:
            assert estimate is not None  # set by the step before: the tail starts after the window
            x = denoiser.finish(module, x, estimate, tail, cond, uncond)
            latents.extend([x] * (denoiser.grid.steps - i))
            log_probs.extend([torch.full_like(log_probs[-1], float("nan"))] * (denoiser.grid.steps - i))
            break
        before = x
        x, out = denoiser.sample(module, x, i, plan.sde[:, i].tolist(), noise, cond, uncond)
        if tail is not None and i == tail.start - 1:
            estimate = OdeTail.estimate(before, out.velocity, float(tail.sigmas[0]))
        log_probs.append(out.log_prob)
        latents.append(x)
    stacked = torch.stack(latents, dim=1)
    images = denoiser.family.decode(stacked[:, -1])
    return Trajectory(stacked, sde_log_probs(torch.stack(log_probs, dim=1), plan.sde), cond, uncond, images)


def sde_log_probs(log_probs: torch.Tensor, sde: torch.Tensor) -> torch.Tensor:
    """[B, T] the steps' log-probs, NaN at the ODE steps (which have none)."""
    return torch.where(sde.to(log_probs.device), log_probs, torch.full_like(log_probs, float("nan")))


def sample_noise(algorithm: Algorithm, step: int, sample_ids: list[int], device: torch.device) -> SampleNoise:
    """The streams of these samples at this training step (equal on every rank and executor). With
    ``algorithm.init_same_noise`` every member of a prompt's group starts from its group's x_0 (DanceGRPO's
    one starting noise per group); the steps' noise is each sample's own either way."""
    seeds = [sample_seed(algorithm.seed, step, s) for s in sample_ids]
    spec = algorithm.spec
    if not spec.init_same_noise:
        return SampleNoise.seeded(seeds, device)
    starts = [group_start_seed(algorithm.seed, step, s // spec.group_size) for s in sample_ids]
    return SampleNoise.seeded(seeds, device, starts)


@torch.no_grad()
def sample_ode(
    denoiser: DenoisingStep,
    module: nn.Module,
    cond: Conditioning,
    uncond: Conditioning | None,
    seeds: list[int],
) -> torch.Tensor:
    """Deterministic (noise 0) images for fixed seeds: comparable across steps and jobs."""
    noise = SampleNoise.seeded([stream_seed("eval", s) for s in seeds], cond.hidden.device)
    x = noise.initial(denoiser.family.latent_shape)
    for i in range(denoiser.grid.steps):
        x = denoiser.euler(module, x, i, cond, uncond)
    return denoiser.family.decode(x)
