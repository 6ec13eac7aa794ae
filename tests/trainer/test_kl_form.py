"""algorithm.kl_form: the KL term of one Flash-GRPO step against a value computed by hand (docs/algorithms.md §5.2)."""

from __future__ import annotations

import pytest
import torch

from trainer.algorithms.registry import make_algorithm
from trainer.loss import reference_kl
from trainer.sampling.sde_step import sde_step
from trainer.sampling.step_grid import StepGrid
from trainer.spec import AlgorithmSpec

# σ = 1, 0.75, 0.5, 0.25, 0; the step from σ = 0.5 (i = 2): Δ = −0.25, Flash-GRPO's g = σ_1 σ = 0.375.
SIGMAS = torch.tensor([1.0, 0.75, 0.5, 0.25, 0.0], dtype=torch.float64)
# With x = 0, v_θ = 1 and v_ref = 0, μ_θ − μ_ref is the coefficient of v in μ:
# h = Δ (1 + g²(1 − σ)/(2σ)) = −0.267578125, and τ² = g²(−Δ) = 0.03515625.
EXACT = 0.267578125**2 / (2 * 0.03515625)  # 1.0182834…: (Δμ)²/(2τ²)
FLOW_GRPO = 0.267578125**2 / (2 * 0.375**2)  # 0.2545708…: (Δμ)²/(2g²) = (−Δ) × EXACT


def flash_kl(**fields: object) -> float:
    spec = AlgorithmSpec(name="flash_grpo", sampling_steps=4, **fields)  # type: ignore[arg-type]
    algorithm = make_algorithm(spec, SIGMAS, seed=0)
    x, index = torch.zeros(1, 2, 3, 3), torch.tensor([2])
    grid = StepGrid.build(SIGMAS, algorithm.sde_kind, spec.noise_level)
    policy = sde_step(torch.ones_like(x), x, index, grid, x_next=x)
    reference = sde_step(torch.zeros_like(x), x, index, grid, x_next=x)
    return float(reference_kl(policy.mean, reference.mean, algorithm.kl_std(policy)))


def test_flash_grpo_s_kl_is_the_exact_gaussian_kl_by_default_as_its_released_code_divides_by_two_tau_squared() -> None:
    assert AlgorithmSpec(name="flash_grpo").kl_form == "exact"
    assert flash_kl() == pytest.approx(EXACT, rel=1e-6)


def test_the_flow_grpo_form_divides_by_g_squared_and_is_minus_delta_times_the_exact_one() -> None:
    assert flash_kl(kl_form="flow_grpo") == pytest.approx(FLOW_GRPO, rel=1e-6)
    assert pytest.approx(0.25 * EXACT) == FLOW_GRPO


@pytest.mark.parametrize(
    ("name", "form"), [("flow_grpo", "flow_grpo"), ("flow_grpo_fast", "flow_grpo"), ("dance_grpo", "flow_grpo")]
)
def test_each_algorithm_defaults_to_its_upstream_kl_form(name: str, form: str) -> None:
    assert AlgorithmSpec(name=name).kl_form == form  # type: ignore[arg-type]
