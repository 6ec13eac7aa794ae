"""MixGRPO-Flash's solver after the window: DPM-Solver++ (2M, midpoint) on a shorter σ grid (docs/algorithms.md §3.6).

MixGRPO-Flash (Tencent-Hunyuan/MixGRPO ``fastvideo/utils/sampling_utils.py``, ``run_sample_step`` with
``dpm_apply_strategy="post"`` and ``dpm_step``) replaces the Euler steps after the SDE window by a multistep
DPM-Solver++ of order 2 on a grid of ⌊(T − a)·r⌋ points from σ_{a+1} down to 0, a the window's last step and r the
compression. With x̂_0 = x − σ v, α = 1 − σ and λ = log(α/σ), one step σ → σ' with h = λ' − λ is

- first order: x' = (σ'/σ) x − α' (e^{−h} − 1) x̂_0, which is x̂_0 itself at σ' = 0 (the last step);
- second order, from the previous step's x̂_0⁻ at σ⁻: x' = first order − ½ α' (e^{−h} − 1) (x̂_0 − x̂_0⁻) / r_0,
  r_0 = (λ − λ⁻)/h.

The coefficients are host fp64 numbers computed once from the plan's grid, so a step only multiplies tensors on
the latents' own device.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class OdeTail:
    """The solver's part of a rollout: steps from ``start`` on, on ``sigmas`` = σ_{start−1}, σ_start, …, 0 (fp64)."""

    start: int
    sigmas: torch.Tensor

    @property
    def evaluations(self) -> int:
        """Transformer calls the tail makes (Euler would make T − start)."""
        return self.sigmas.shape[0] - 2

    @staticmethod
    def estimate(x: torch.Tensor, velocity: torch.Tensor, sigma: float) -> torch.Tensor:
        """x̂_0 = x − σ v in fp32 (upstream's ``convert_model_output``)."""
        return x.float() - sigma * velocity.float()

    def coefficients(self, k: int) -> tuple[float, float, float]:
        """(a, b, c) of the tail's k-th step: x' = a x + b x̂_0 + c (x̂_0 − x̂_0⁻)."""
        before, sigma, after = (float(s) for s in self.sigmas[k : k + 3])
        if after == 0.0:
            return 0.0, 1.0, 0.0  # lower_order_final: the first-order step to σ = 0 is x̂_0
        h = log_snr(after) - log_snr(sigma)
        b = -(1 - after) * math.expm1(-h)
        if before == 1.0:
            return after / sigma, b, 0.0  # λ⁻ = −∞ at σ⁻ = 1 (a window at step 0): r_0 = ∞, upstream's D1 is 0
        r0 = (log_snr(sigma) - log_snr(before)) / h
        return after / sigma, b, 0.5 * b / r0


def log_snr(sigma: float) -> float:
    """λ = log(α/σ) with α = 1 − σ."""
    return math.log(1 - sigma) - math.log(sigma)


def tail_sigmas(sigmas: torch.Tensor, window_end: int, compression: float) -> torch.Tensor:
    """σ_{window_end}, then ⌊(T − window_end)·r⌋ points (at least 2) from σ_{window_end+1} to 0, fp64.

    Upstream spaces them as ``sd3_time_shift(shift, linspace(u, 0, n))`` from the unshifted time u = 1 −
    (window_end + 1)/T of its own grid ``shift(linspace(1, 0, T + 1))``. Here the shift s is the one that puts
    σ_{window_end+1} at that u on the job's own grid, s = σ(1 − u)/(u(1 − σ)): exactly upstream's points on
    upstream's grid, and on any other grid a shifted curve through the tail's first point.
    """
    grid = sigmas.to(torch.float64)
    steps = grid.shape[0] - 1
    count = max(int((steps - window_end) * compression), 2)
    u = 1 - (window_end + 1) / steps
    first = float(grid[window_end + 1])
    shift = first * (1 - u) / (u * (1 - first))
    times = torch.linspace(u, 0, count, dtype=torch.float64)
    tail = shift * times / (1 + (shift - 1) * times)
    tail[0] = first
    return torch.cat([grid[window_end : window_end + 1], tail])
