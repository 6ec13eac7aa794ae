"""The σ grid and every per-step coefficient of one job's sampler, fp32 on the job's device.

The coefficients are computed once, in fp64 from the checkpoint's fp64 σ grid (schedule.py), and cast
once; a step then only gathers them by step index and multiplies on the latents' own device, so no
step builds a coefficient on the host or mixes devices (docs/algorithms.md §2):

- the Gaussian samplers: μ = x (1 + g²Δ/(2σ)) + v Δ (1 + g²(1 − σ)/(2σ)), τ = g √(−Δ),
  log p = −(x' − μ)²/(2τ²) − log τ − ½ log 2π;
- CPS: μ = (1 − σ') (x − σ v) + √(σ'² − τ²) (x + (1 − σ) v), τ = σ' sin(ηπ/2), log p = −(x' − μ)²;
- GRPO-Guard's step (``flow_grpo_guard``): Flow-GRPO's transition with its log-probability scaled by τ, so the
  ratio is exp(τ (ℓ_θ − ℓ_old)), GRPO-Guard's normalised ratio at the rollout's weights (docs/algorithms.md §5.3);
- the Euler (ODE) step: x + Δ v.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from trainer.sampling.sde_step import SdeKind, diffusion_coefficient


@dataclass(frozen=True)
class StepGrid:
    kind: SdeKind
    level: float
    sigmas: torch.Tensor  # [T+1] σ_0 > … > σ_T = 0: the transformer's noise level at each step
    delta: torch.Tensor  # [T] Δ_i = σ_{i+1} − σ_i (the Euler step)
    x_coefficient: torch.Tensor  # [T] μ's factor on x
    v_coefficient: torch.Tensor  # [T] μ's factor on v
    tau: torch.Tensor  # [T] the transition's std
    kl_std: torch.Tensor  # [T] g for the Gaussian samplers, τ for CPS (what the Flow-GRPO KL divides by)
    residual_scale: torch.Tensor  # [T] log p = −(x' − μ)² · residual_scale + log_offset
    log_offset: torch.Tensor  # [T]

    @property
    def steps(self) -> int:
        return self.delta.shape[0]

    @property
    def device(self) -> torch.device:
        return self.sigmas.device

    @classmethod
    def build(cls, sigmas: torch.Tensor, kind: SdeKind, level: float, device: torch.device | str = "cpu") -> StepGrid:
        """``kind``'s tables at noise level ``level`` on the fp64 grid ``sigmas``, cast once to fp32 on ``device``."""
        grid = sigmas.to(torch.float64)
        steps = torch.arange(grid.shape[0] - 1)
        s, s1 = grid[:-1], grid[1:]
        d = s1 - s
        if kind == "cps":
            tau = s1 * math.sin(level * math.pi / 2)
            root = torch.sqrt(s1**2 - tau**2)
            x_coefficient = (1 - s1) + root
            v_coefficient = root * (1 - s) - (1 - s1) * s
            kl_std = tau
            residual_scale, log_offset = torch.ones_like(s), torch.zeros_like(s)
        else:
            g = diffusion_coefficient(kind, grid, steps, level)
            x_coefficient = 1 + g * g * d / (2 * s)
            v_coefficient = d * (1 + g * g * (1 - s) / (2 * s))
            tau = g * torch.sqrt(-d)
            kl_std = g
            residual_scale = 1 / (2 * tau**2)
            log_offset = -torch.log(tau) - 0.5 * math.log(2 * math.pi)
            if kind == "flow_grpo_guard":
                residual_scale, log_offset = residual_scale * tau, log_offset * tau
        tables = (grid, d, x_coefficient, v_coefficient, tau, kl_std, residual_scale, log_offset)
        return cls(kind, level, *(t.to(device=device, dtype=torch.float32) for t in tables))

    def index(self, step: int | torch.Tensor, rows: int) -> torch.Tensor:
        """[rows] step indices on the grid's device: one step for every row, or a per-row tensor moved here."""
        if isinstance(step, int):
            return torch.full((rows,), step, dtype=torch.long, device=self.device)
        return step.to(self.device)

    def sigma(self, index: torch.Tensor) -> torch.Tensor:
        """[B] σ_i per row: the noise level the transformer is called at."""
        return self.sigmas[index.to(self.device)]
