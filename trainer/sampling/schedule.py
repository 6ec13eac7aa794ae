"""Shifted flow-matching sigma schedules (algorithms.md §1.2)."""

from __future__ import annotations

import torch


def shifted_sigmas(steps: int, shift: float) -> torch.Tensor:
    """σ_0 = 1 > σ_1 > ... > σ_T = 0 from a uniform grid shifted toward high noise, in fp64.

    Kept in float64 so that coefficients derived from it (g, c) are exact to the step math;
    callers index it by step number, never by a float timestep.
    """
    u = torch.linspace(1.0, 0.0, steps + 1, dtype=torch.float64)
    return shift * u / (1 + (shift - 1) * u)
