"""Sampling trajectories: the SDE/ODE rollout that records latents and old log-probs, and
the pure-ODE sampler used for evaluation images.

These run under whatever grad mode the caller chose: the native executor rolls out under
``no_grad``; an executor that keeps rollout graphs calls ``denoise_step`` with grad on.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from trainer.algorithms.base import Algorithm, StepPlan
from trainer.models.base import Conditioning, ModelFamily
from trainer.sampling.sde_step import StepOutput, ode_step, sde_step
from trainer.seeding import sample_generator, stream_seed


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


def row_chunks(rows: int, chunks: int) -> list[torch.Tensor]:
    """Row indices 0..rows-1 in ``chunks`` contiguous parts of near-equal size (fewer when rows < chunks)."""
    return list(torch.arange(rows).tensor_split(min(chunks, rows)))


def initial_noise(generators: list[torch.Generator], shape: tuple[int, ...], device: torch.device) -> torch.Tensor:
    return torch.stack([torch.randn(shape, generator=g) for g in generators]).to(device)


def denoise_step(
    family: ModelFamily,
    module: nn.Module,
    algorithm: Algorithm,
    x: torch.Tensor,
    step: int,
    stochastic: torch.Tensor,
    generators: list[torch.Generator],
    cond: Conditioning,
    uncond: Conditioning | None,
    cfg_scale: float,
) -> tuple[torch.Tensor, StepOutput]:
    """x_i → x_{i+1} for every row; rows where ``stochastic`` is False take the Euler step.

    Noise is drawn only for stochastic rows, from each sample's own generator.
    """
    rows = x.shape[0]
    sigmas = algorithm.sigmas
    index = torch.full((rows,), step, dtype=torch.long)
    velocity = family.velocity(module, x, sigmas[index].float().to(x.device), cond, uncond, cfg_scale)
    noise = torch.zeros(x.shape, dtype=torch.float32)
    for row in range(rows):
        if stochastic[row]:
            noise[row] = torch.randn(x.shape[1:], generator=generators[row])
    out = sde_step(velocity, x, index, sigmas, algorithm.sde_kind, algorithm.level, noise=noise.to(x.device))
    ode = ode_step(velocity, x, index, sigmas)
    mask = stochastic.to(x.device).reshape(-1, *([1] * (x.dim() - 1)))
    return torch.where(mask, out.next, ode), out


def rollout(
    family: ModelFamily,
    module: nn.Module,
    algorithm: Algorithm,
    plan: StepPlan,
    sample_ids: torch.Tensor,
    step: int,
    cond: Conditioning,
    uncond: Conditioning | None,
    cfg_scale: float,
) -> Trajectory:
    device = cond.hidden.device
    generators = [sample_generator(algorithm.seed, step, int(s)) for s in sample_ids]
    x = initial_noise(generators, family.latent_shape, device)
    latents = [x]
    log_probs = torch.full((x.shape[0], algorithm.steps), float("nan"), device=device)
    for i in range(algorithm.steps):
        stochastic = plan.sde[:, i]
        x, out = denoise_step(family, module, algorithm, x, i, stochastic, generators, cond, uncond, cfg_scale)
        log_probs[:, i] = torch.where(stochastic.to(device), out.log_prob, log_probs[:, i])
        latents.append(x)
    stacked = torch.stack(latents, dim=1)
    return Trajectory(stacked, log_probs, cond, uncond, family.decode(stacked[:, -1]))


@torch.no_grad()
def sample_ode(
    family: ModelFamily,
    module: nn.Module,
    sigmas: torch.Tensor,
    cond: Conditioning,
    uncond: Conditioning | None,
    cfg_scale: float,
    seeds: list[int],
) -> torch.Tensor:
    """Deterministic (noise 0) images for fixed seeds: comparable across steps and jobs."""
    device = cond.hidden.device
    generators = [torch.Generator().manual_seed(stream_seed("eval", s)) for s in seeds]
    x = initial_noise(generators, family.latent_shape, device)
    for i in range(len(sigmas) - 1):
        index = torch.full((x.shape[0],), i, dtype=torch.long)
        velocity = family.velocity(module, x, sigmas[index].float().to(device), cond, uncond, cfg_scale)
        x = ode_step(velocity, x, index, sigmas)
    return family.decode(x)
