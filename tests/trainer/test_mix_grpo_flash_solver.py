"""MixGRPO-Flash's solver after the window against fp64 re-implementations of the released code (≤ 1e-6 relative):
the shortened σ grid of ``run_sample_step`` (``dpm_apply_strategy="post"``) and one DPM-Solver++ step of
``dpm_step`` (``multistep_dpm_solver_second_order_update``, midpoint, and the first-order last step), both from
Tencent-Hunyuan/MixGRPO ``fastvideo/utils/sampling_utils.py``."""

from __future__ import annotations

import math

import pytest
import torch

from trainer.sampling.dpm_solver import OdeTail, tail_sigmas

SHAPE = (2, 4, 6, 6)


def mix_grpo_sigmas(steps: int, shift: float = 3.0) -> torch.Tensor:
    t = torch.linspace(1, 0, steps + 1, dtype=torch.float64)
    return shift * t / (1 + (shift - 1) * t)


def upstream_schedule(steps: int, last_sde: int, ratio: float, shift: float = 3.0) -> torch.Tensor:
    """run_sample_step's rebuilt schedule: the grid up to the window's last step, then the shifted short tail."""
    grid = mix_grpo_sigmas(steps, shift)
    count = int(max((steps - last_sde) * ratio, 1))
    start = torch.linspace(1, 0, steps + 1, dtype=torch.float64)[last_sde + 1].item()
    tail = torch.linspace(start, 0, count, dtype=torch.float64)
    return torch.cat([grid[: last_sde + 1], shift * tail / (1 + (shift - 1) * tail)])


@pytest.mark.parametrize(("last_sde", "ratio"), [(3, 0.4), (10, 0.4), (3, 0.2), (15, 0.4), (0, 1.0)])
def test_the_tail_grid_is_upstream_s_shortened_schedule(last_sde: int, ratio: float) -> None:
    ours = tail_sigmas(mix_grpo_sigmas(25), last_sde, ratio)
    theirs = upstream_schedule(25, last_sde, ratio)[last_sde:]
    assert ours.shape == theirs.shape
    assert float((ours - theirs).abs().max()) <= 1e-12


def test_a_tail_upstream_would_leave_at_noise_still_reaches_zero() -> None:
    """Upstream keeps int(max((T − a) r, 1)) points: one point (no step to σ = 0) when (T − a) r < 2; ours keeps 2."""
    ours = tail_sigmas(mix_grpo_sigmas(25), 21, 0.4)
    assert len(upstream_schedule(25, 21, 0.4)) == 23 and ours.tolist()[-1] == 0.0 and len(ours) == 3


def upstream_dpm_step(sample, x0, x0_before, before: float, sigma: float, after: float, final: bool):
    """dpm_step's ODE update (dpmsolver++, order 2, midpoint) in fp64: first order at the last step."""

    def alpha_sigma(s: float) -> tuple[torch.Tensor, torch.Tensor]:
        value = torch.tensor(s, dtype=torch.float64)
        return 1 - value, value

    alpha_t, sigma_t = alpha_sigma(after)
    alpha_s0, sigma_s0 = alpha_sigma(sigma)
    alpha_s1, sigma_s1 = alpha_sigma(before)
    lambda_t = torch.log(alpha_t) - torch.log(sigma_t)
    lambda_s0 = torch.log(alpha_s0) - torch.log(sigma_s0)
    lambda_s1 = torch.log(alpha_s1) - torch.log(sigma_s1)
    h = lambda_t - lambda_s0
    if final:
        return (sigma_t / sigma_s0) * sample - (alpha_t * (torch.exp(-h) - 1.0)) * x0
    r0 = (lambda_s0 - lambda_s1) / h
    d1 = (1.0 / r0) * (x0 - x0_before)
    return (
        (sigma_t / sigma_s0) * sample
        - (alpha_t * (torch.exp(-h) - 1.0)) * x0
        - 0.5 * (alpha_t * (torch.exp(-h) - 1.0)) * d1
    )


@pytest.mark.parametrize("last_sde", [0, 3, 12])
def test_every_tail_step_matches_upstream_s_dpm_solver_step(last_sde: int) -> None:
    sigmas = tail_sigmas(mix_grpo_sigmas(25), last_sde, 0.4)
    tail = OdeTail(last_sde + 1, sigmas)
    generator = torch.Generator().manual_seed(last_sde)
    x, velocity, estimate = (torch.randn(SHAPE, generator=generator, dtype=torch.float64) for _ in range(3))
    for k in range(tail.evaluations):
        before, sigma, after = (float(s) for s in sigmas[k : k + 3])
        current = OdeTail.estimate(x.float(), velocity.float(), sigma)
        a, b, c = tail.coefficients(k)
        ours = a * x.float() + b * current + c * (current - estimate.float())
        theirs = upstream_dpm_step(x, x - sigma * velocity, estimate, before, sigma, after, k == tail.evaluations - 1)
        assert float((ours.double() - theirs).norm() / theirs.norm()) <= 1e-6, f"tail step {k}"
        x, estimate, velocity = (
            theirs,
            x - sigma * velocity,
            torch.randn(SHAPE, generator=generator, dtype=torch.float64),
        )


def test_the_solver_makes_fewer_transformer_calls_than_euler() -> None:
    """T = 25, window 0-3: upstream's r = 0.4 leaves 8 points, 7 calls after the window instead of 21."""
    tail = OdeTail(4, tail_sigmas(mix_grpo_sigmas(25), 3, 0.4))
    assert (tail.evaluations, 25 - tail.start) == (7, 21)
    assert math.isclose(float(tail.sigmas[1]), float(mix_grpo_sigmas(25)[4]), rel_tol=1e-12)
