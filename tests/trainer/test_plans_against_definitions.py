"""Every algorithm's plan against its definition in docs/algorithms.md §2-3: which steps are stochastic, which
train and in what order, their weights, and the noise level of each SDE step, with the coefficients recomputed
here from the formulas and checked against the worked tables (SD3.5-M §2.8, Wan's Flash-GRPO 1/c §3.5)."""

from __future__ import annotations

import math

import pytest
import torch

from tests.trainer.conftest import sd3_sigmas
from trainer.algorithms.base import Algorithm, StepPlan
from trainer.algorithms.registry import make_algorithm
from trainer.distributed import Distributed
from trainer.layout import SampleBatch, step_batch
from trainer.sampling.sde_step import diffusion_coefficient, score_factor, sde_step
from trainer.sampling.step_grid import StepGrid
from trainer.spec import AlgorithmSpec

SINGLE = Distributed(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
POOL = [f"prompt {n}" for n in range(40)]

# §2.8: SD3.5-M, 10 steps, shift 3, a = 0.7, per step i: (timestep, g_i, τ_i, c_i, CPS τ).
SD35 = [
    (1000, 3.506, 0.700, 0.057, 0.856),
    (960, 3.435, 0.743, 0.078, 0.814),
    (913, 2.273, 0.536, 0.129, 0.764),
    (858, 1.719, 0.446, 0.188, 0.704),
    (790, 1.359, 0.392, 0.264, 0.630),
    (707, 1.088, 0.353, 0.371, 0.537),
    (602, 0.861, 0.319, 0.536, 0.414),
    (465, 0.652, 0.282, 0.825, 0.248),
    (278, 0.434, 0.225, 1.487, 0.008),
    (9, 0.066, 0.006, 1.771, 0.0),
]
# §3.5: Flash-GRPO's 1/c for Wan2.1's first ten steps (shift 3, T = 20), as its released script hard-codes them.
WAN_INVERSE_C = [7.4770, 7.0414, 6.6112, 6.1867, 5.7682, 5.3559, 4.9502, 4.5513, 4.1596, 3.7754]


def reference_g(kind: str, sigmas: list[float], i: int, level: float) -> float:
    """g_i of §2.1's table: Flow-GRPO a√(σ/(1 − σ̃)) with σ̃ = σ_1 at σ = 1, DanceGRPO η, Flash-GRPO σ_1 σ."""
    s = sigmas[i]
    if kind == "flow_grpo":
        return level * math.sqrt(s / (1 - (sigmas[1] if s == 1 else s)))
    return level if kind == "dance" else sigmas[1] * s


def reference_c(kind: str, sigmas: list[float], i: int, level: float) -> float:
    """c_i = √(−Δ)/g + g √(−Δ) (1 − σ)/(2σ) (§3.5)."""
    s, root = sigmas[i], math.sqrt(sigmas[i] - sigmas[i + 1])
    g = reference_g(kind, sigmas, i, level)
    return root / g + g * root * (1 - s) / (2 * s)


def wan_sigmas(steps: int = 20, shift: float = 3.0) -> torch.Tensor:
    """§1.2: ``linspace(0.999, 0, T + 1)[:-1]`` shifted by s u / (1 + (s − 1) u), with 0 appended."""
    grid = [0.999 * (1 - n / steps) for n in range(steps)]
    return torch.tensor([shift * u / (1 + (shift - 1) * u) for u in grid] + [0.0], dtype=torch.float64)


def planned(step: int = 1, **fields: object) -> tuple[StepPlan, SampleBatch, Algorithm]:
    spec = AlgorithmSpec(**{"group_size": 4, "prompts_per_step": 3, **fields})  # type: ignore[arg-type]
    algorithm = make_algorithm(spec, sd3_sigmas(spec.sampling_steps), seed=0)
    batch = step_batch(POOL, step, 0, spec.prompts_per_step, spec.group_size, 0, 1)
    return algorithm.plan(batch, SINGLE), batch, algorithm


def test_the_sd3_5_schedule_and_flow_grpo_s_coefficients_are_the_worked_table_s() -> None:
    sigmas = sd3_sigmas(10)
    grid = sigmas.tolist()
    assert [round(1000 * s) for s in grid[:10]] == [row[0] for row in SD35]
    for i, (_, g, tau, c, cps_tau) in enumerate(SD35):
        index = torch.tensor([i])
        assert reference_g("flow_grpo", grid, i, 0.7) == pytest.approx(g, abs=6e-4), i
        assert float(diffusion_coefficient("flow_grpo", sigmas, index, 0.7)) == pytest.approx(g, abs=6e-4), i
        x = torch.zeros(1, 1, 2, 2)
        gaussian = sde_step(x, x, index, StepGrid.build(sigmas, "flow_grpo", 0.7), x_next=x)
        assert float(gaussian.tau) == pytest.approx(tau, abs=6e-4) and float(gaussian.kl_std) == pytest.approx(
            g, abs=6e-4
        )
        assert float(score_factor("flow_grpo", sigmas, index, 0.7)) == pytest.approx(c, abs=6e-4), i
        if i < 9:  # the last CPS step has τ = 0: deterministic, no density
            assert float(sde_step(x, x, index, StepGrid.build(sigmas, "cps", 0.7), x_next=x).tau) == pytest.approx(
                cps_tau, abs=6e-4
            )


def test_flash_grpo_s_inverse_c_on_wan_s_schedule_is_the_table_its_released_script_hard_codes() -> None:
    sigmas = wan_sigmas()
    steps = torch.arange(10)
    assert (1 / score_factor("flash", sigmas, steps, 0.0)).tolist() == pytest.approx(WAN_INVERSE_C, abs=6e-5)
    grid = sigmas.tolist()
    assert [1 / reference_c("flash", grid, i, 0.0) for i in range(10)] == pytest.approx(WAN_INVERSE_C, abs=6e-5)


@pytest.mark.parametrize(
    ("name", "level", "kind"),
    [
        ("flow_grpo", 0.7, "flow_grpo"),
        ("flow_grpo_fast", 0.9, "flow_grpo"),
        ("dance_grpo", 0.3, "dance"),
        ("flash_grpo", 0.7, "flash"),
    ],
)
def test_each_algorithm_s_sde_step_has_its_own_diffusion_coefficient_at_every_step(
    name: str, level: float, kind: str
) -> None:
    """Flow-GRPO(-Fast) a√(σ/(1 − σ̃)), DanceGRPO a constant η, Flash-GRPO σ_1 σ (no level)."""
    _, _, algorithm = planned(name=name, noise_level=level, sampling_steps=10)
    assert algorithm.sde_kind == kind and algorithm.level == level
    grid = algorithm.sigmas.tolist()
    got = diffusion_coefficient(algorithm.sde_kind, algorithm.sigmas, torch.arange(10), algorithm.level)
    assert got.tolist() == pytest.approx([reference_g(kind, grid, i, level) for i in range(10)], rel=1e-12)


@pytest.mark.parametrize("steps", [6, 10, 20])
def test_flow_grpo_is_stochastic_everywhere_and_trains_its_first_k_steps_in_time_order(steps: int) -> None:
    """K = ⌊0.99 T⌋ (timestep_fraction 0.99): 5 of 6, 9 of 10, 19 of 20, never the last step; weight 1."""
    plan, batch, _ = planned(name="flow_grpo", sampling_steps=steps)
    rows = len(batch.prompts)
    assert plan.sde.shape == (rows, steps) and bool(plan.sde.all())
    assert plan.trained.tolist() == [list(range(math.floor(0.99 * steps)))] * rows
    assert plan.weights is None


@pytest.mark.parametrize(("steps", "starts"), [(10, {0, 1, 2}), (6, {0})])
def test_flow_grpo_fast_is_stochastic_and_trained_exactly_on_its_window_ode_elsewhere(
    steps: int, starts: set[int]
) -> None:
    """Window w = 3 starting at randint(r0, r1 − w) with [r0, r1] = (0, ⌊T/2⌋): {0, 1, 2} for SD3.5 (T = 10),
    always 0 for FLUX (T = 6); every sample of the step shares it; K = w, in order; weight 1."""
    seen = set()
    for step in range(1, 40):
        plan, batch, _ = planned(step, name="flow_grpo_fast", sampling_steps=steps, window_size=3)
        start = int(plan.trained[0, 0])
        seen.add(start)
        window = [n in range(start, start + 3) for n in range(steps)]
        assert plan.sde.tolist() == [window] * len(batch.prompts)
        assert plan.trained.tolist() == [list(range(start, start + 3))] * len(batch.prompts)
        assert plan.weights is None
    assert seen == starts


@pytest.mark.parametrize(("steps", "trained"), [(16, 9), (12, 6), (20, 11)])
def test_dance_grpo_is_stochastic_everywhere_and_trains_a_per_sample_permutation_of_all_but_the_last_step(
    steps: int, trained: int
) -> None:
    """K = ⌊0.6 (T − 1)⌋ (9 of 15 for FLUX at T = 16, 6 of 11 at T = 12, 11 of 19 for Wan), each sample its own
    random steps of 0..T − 2 in the permuted order (not sorted); weight 1."""
    plan, batch, _ = planned(name="dance_grpo", sampling_steps=steps, noise_level=0.3)
    assert bool(plan.sde.all()) and plan.trained.shape == (len(batch.prompts), trained)
    rows = plan.trained.tolist()
    assert all(len(set(row)) == trained and max(row) <= steps - 2 for row in rows)
    assert len({tuple(row) for row in rows}) == len(rows)
    assert any(row != sorted(row) for row in rows)
    assert plan.weights is None


def test_flash_grpo_takes_one_sde_step_per_sample_shared_by_its_group_and_weighted_by_inverse_c() -> None:
    """One step k_p per prompt from the first half (T = 20: 0..9), the only SDE step and the only trained one;
    w_n = (1/c(k_p)) / mean(1/c) with c recomputed from σ_1 σ."""
    plan, batch, algorithm = planned(step=2, name="flash_grpo", sampling_steps=20, prompts_per_step=8)
    rows = len(batch.prompts)
    assert plan.trained.shape == (rows, 1) and plan.sde.sum(dim=1).tolist() == [1] * rows
    assert plan.sde[torch.arange(rows), plan.trained[:, 0]].all()
    steps = plan.trained[:, 0].tolist()
    assert max(steps) <= 9 and len(set(steps)) > 1
    for group in batch.group_ids.unique():
        assert plan.trained[batch.group_ids == group].unique().numel() == 1
    grid = algorithm.sigmas.tolist()
    inverse_c = [1 / reference_c("flash", grid, k, 0.0) for k in steps]
    mean = sum(inverse_c) / rows
    assert plan.weights is not None
    assert plan.weights.double().tolist() == pytest.approx([w / mean for w in inverse_c], rel=1e-6)
