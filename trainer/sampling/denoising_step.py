"""The denoising step every executor calls: the transformer's velocity at σ_i and the transition to x_{i+1}.

Rollout, native's re-forward, the Lean executors' graph rollout, JAGG, DigenRL's replay, the KL
reference, the evaluation sampler and the bench all step through this one class, so a step's
arithmetic and its device discipline live here: σ and the coefficients come from the job's
``StepGrid`` on the latents' device, noise from each sample's own stream on that device, and
nothing in a step reads a device value back to the host.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from trainer.models.base import Conditioning, ModelFamily
from trainer.sampling.dpm_solver import OdeTail
from trainer.sampling.noise import SampleNoise
from trainer.sampling.sde_step import StepOutput, ode_step, sde_step
from trainer.sampling.step_grid import StepGrid


def row_chunks(rows: int, chunks: int, device: torch.device | None = None) -> list[torch.Tensor]:
    """Row indices 0..rows-1 in ``chunks`` contiguous parts of near-equal size (fewer when rows < chunks)."""
    return list(torch.arange(rows, device=device).tensor_split(min(chunks, rows)))


@dataclass(frozen=True)
class DenoisingStep:
    family: ModelFamily
    grid: StepGrid
    cfg_scale: float

    def velocity(
        self,
        module: nn.Module,
        x: torch.Tensor,
        index: torch.Tensor,
        cond: Conditioning,
        uncond: Conditioning | None,
        chunks: int = 1,
    ) -> torch.Tensor:
        """v(x_i, σ_i) of every row (CFG-combined), forwarded in ``chunks`` row chunks: native's re-forward
        passes the rollout's chunk count so its batch shapes, and so its first ratio, are the rollout's."""
        sigma = self.grid.sigma(index)
        parts = row_chunks(x.shape[0], chunks, x.device)
        if len(parts) == 1:
            return self.family.velocity(module, x, sigma, cond, uncond, self.cfg_scale)
        velocities = []
        for rows in parts:
            part_uncond = None if uncond is None else uncond.index(rows)
            velocities.append(
                self.family.velocity(module, x[rows], sigma[rows], cond.index(rows), part_uncond, self.cfg_scale)
            )
        return torch.cat(velocities)

    def toward(
        self,
        module: nn.Module,
        x: torch.Tensor,
        index: torch.Tensor,
        cond: Conditioning,
        uncond: Conditioning | None,
        x_next: torch.Tensor,
    ) -> StepOutput:
        """The transition x_i → the given x_{i+1} under ``module``: its log-prob and mean (replay, the KL reference)."""
        index = index.to(self.grid.device)
        velocity = self.velocity(module, x, index, cond, uncond)
        return sde_step(velocity, x, index, self.grid, x_next)

    def sample(
        self,
        module: nn.Module,
        x: torch.Tensor,
        step: int,
        stochastic: list[bool],
        noise: SampleNoise,
        cond: Conditioning,
        uncond: Conditioning | None,
    ) -> tuple[torch.Tensor, StepOutput]:
        """x_i → x_{i+1} for every row at step ``step``: the SDE step with each stochastic row's own noise, the
        Euler step for the others (their log-prob is meaningless; the caller masks it)."""
        index = self.grid.index(step, x.shape[0])
        velocity = self.velocity(module, x, index, cond, uncond)
        out = sde_step(velocity, x, index, self.grid, noise=noise.step(tuple(x.shape[1:]), stochastic))
        if all(stochastic):
            return out.next, out
        ode = ode_step(velocity, x, index, self.grid)
        if not any(stochastic):
            return ode, out
        mask = torch.tensor(stochastic, device=x.device).reshape(-1, *([1] * (x.dim() - 1)))
        return torch.where(mask, out.next, ode), out

    def finish(
        self,
        module: nn.Module,
        x: torch.Tensor,
        estimate: torch.Tensor,
        tail: OdeTail,
        cond: Conditioning,
        uncond: Conditioning | None,
    ) -> torch.Tensor:
        """x_T from x at step ``tail.start`` by MixGRPO-Flash's DPM-Solver++ (2M) on the tail's grid; ``estimate``
        is the x̂_0 of the step before (``OdeTail.estimate``), the multistep's history."""
        x = x.float()
        for k in range(tail.evaluations):
            sigma = float(tail.sigmas[k + 1])
            at = torch.full((x.shape[0],), sigma, device=x.device)
            current = OdeTail.estimate(x, self.family.velocity(module, x, at, cond, uncond, self.cfg_scale), sigma)
            a, b, c = tail.coefficients(k)
            x = a * x + b * current + c * (current - estimate)
            estimate = current
        return x

    def euler(
        self, module: nn.Module, x: torch.Tensor, step: int, cond: Conditioning, uncond: Conditioning | None
    ) -> torch.Tensor:
        """The deterministic (ODE) step of every row."""
        index = self.grid.index(step, x.shape[0])
        return ode_step(self.velocity(module, x, index, cond, uncond), x, index, self.grid)
