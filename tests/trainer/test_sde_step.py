"""The SDE step against docs/algorithms.md §2: Gaussian log-density, ODE limit, score factor c."""

from __future__ import annotations

import math

import pytest
import torch

from tests.trainer.conftest import sd3_sigmas
from trainer.sampling.sde_step import diffusion_coefficient, ode_step, score_factor, sde_step
from trainer.sampling.step_grid import StepGrid


def _inputs(rows: int = 3) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(0)
    shape = (rows, 4, 8, 8)
    return (
        torch.randn(shape, generator=generator),
        torch.randn(shape, generator=generator),
        torch.randn(shape, generator=generator),
    )


@pytest.mark.parametrize("kind", ["flow_grpo", "dance", "flash"])
def test_sde_log_prob_equals_normal_log_density_mean_over_dims(kind: str) -> None:
    sigmas = sd3_sigmas(10)
    velocity, x, noise = _inputs()
    index = torch.tensor([0, 4, 8])
    out = sde_step(velocity, x, index, StepGrid.build(sigmas, kind, 0.7), noise=noise)
    expected = torch.distributions.Normal(out.mean, out.tau.reshape(-1, 1, 1, 1)).log_prob(out.next).mean(dim=(1, 2, 3))
    assert torch.allclose(out.log_prob, expected, atol=1e-6, rtol=0)
    replay = sde_step(velocity, x, index, StepGrid.build(sigmas, kind, 0.7), x_next=out.next)
    assert torch.equal(replay.log_prob, out.log_prob)


def test_mean_matches_the_reference_coefficients_m_and_h() -> None:
    sigmas = sd3_sigmas(10)
    velocity, x, noise = _inputs(1)
    i = 3
    s, d = float(sigmas[i]), float(sigmas[i + 1] - sigmas[i])
    g = 0.7 * math.sqrt(s / (1 - s))
    m = 1 + g * g * d / (2 * s)
    h = d * (1 + g * g * (1 - s) / (2 * s))
    out = sde_step(velocity, x, torch.tensor([i]), StepGrid.build(sigmas, "flow_grpo", 0.7), noise=noise)
    assert torch.allclose(out.mean, m * x + h * velocity, atol=1e-5)
    assert math.isclose(float(out.tau), g * math.sqrt(-d), rel_tol=1e-6)


def test_first_step_substitutes_sigma_one_to_avoid_division_by_zero() -> None:
    sigmas = sd3_sigmas(10)
    g0 = diffusion_coefficient("flow_grpo", sigmas, torch.tensor([0]), 0.7)
    s1 = float(sigmas[1])
    assert math.isclose(float(g0), 0.7 * math.sqrt(1 / (1 - s1)), rel_tol=1e-12)


@pytest.mark.parametrize("kind", ["flow_grpo", "dance"])
def test_vanishing_noise_level_gives_the_ode_step(kind: str) -> None:
    sigmas = sd3_sigmas(10)
    velocity, x, noise = _inputs()
    index = torch.tensor([1, 5, 9])
    out = sde_step(velocity, x, index, StepGrid.build(sigmas, kind, 1e-7), noise=noise)
    assert torch.allclose(out.next, ode_step(velocity, x, index, StepGrid.build(sigmas, "flow_grpo", 0.0)), atol=1e-5)


def test_cps_with_zero_level_is_the_ode_step_and_log_prob_has_no_constants() -> None:
    sigmas = sd3_sigmas(10)
    velocity, x, noise = _inputs()
    index = torch.tensor([0, 4, 8])
    out = sde_step(velocity, x, index, StepGrid.build(sigmas, "cps", 0.0), noise=noise)
    assert torch.allclose(out.next, ode_step(velocity, x, index, StepGrid.build(sigmas, "flow_grpo", 0.0)), atol=1e-5)
    assert torch.equal(out.log_prob, torch.zeros(3))


@pytest.mark.parametrize("kind", ["flow_grpo", "dance", "flash"])
def test_score_factor_matches_its_closed_form(kind: str) -> None:
    sigmas = sd3_sigmas(20)
    level = 0.7 if kind == "flow_grpo" else 0.3
    for i in range(1, 10):
        s, d = float(sigmas[i]), float(sigmas[i + 1] - sigmas[i])
        closed = {
            "flow_grpo": math.sqrt(-d) * math.sqrt((1 - s) / s) * (1 / level + level / 2),
            "dance": math.sqrt(-d) * (1 / level + level * (1 - s) / (2 * s)),
            "flash": math.sqrt(-d) * (1 / (float(sigmas[1]) * s) + float(sigmas[1]) * (1 - s) / 2),
        }[kind]
        assert math.isclose(float(score_factor(kind, sigmas, torch.tensor([i]), level)), closed, rel_tol=1e-9)


def test_flash_inverse_factor_reproduces_the_published_wan_table() -> None:
    sigmas = sd3_sigmas(20)
    published = [7.4770, 7.0414, 6.6112, 6.1867, 5.7682, 5.3559, 4.9502, 4.5513, 4.1596, 3.7754]
    wan = torch.cat(
        [
            3 * (u := torch.linspace(0.999, 0, 21, dtype=torch.float64)[:-1]) / (1 + 2 * u),
            torch.zeros(1, dtype=torch.float64),
        ]
    )
    inverse = 1 / score_factor("flash", wan, torch.arange(10), 0.0)
    assert torch.allclose(inverse, torch.tensor(published, dtype=torch.float64), atol=6e-4)
    assert sigmas[0] == 1 and sigmas[-1] == 0
