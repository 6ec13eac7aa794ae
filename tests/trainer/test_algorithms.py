"""What each algorithm plans (docs/algorithms.md §3): stochastic steps, trained steps, weights."""

from __future__ import annotations

import torch

from tests.trainer.conftest import sd3_sigmas
from trainer.algorithms.registry import make_algorithm
from trainer.distributed import Distributed
from trainer.layout import step_batch
from trainer.sampling.sde_step import score_factor
from trainer.spec import AlgorithmSpec

SINGLE = Distributed(rank=0, world_size=1, local_rank=0, device=torch.device("cpu"))
POOL = [f"prompt {n}" for n in range(20)]


def plan_for(step: int = 1, rank: int = 0, world_size: int = 1, **fields: object):  # type: ignore[no-untyped-def]
    spec = AlgorithmSpec(**{"sampling_steps": 10, "group_size": 4, "prompts_per_step": 3, **fields})
    algorithm = make_algorithm(spec, sd3_sigmas(10), seed=0)
    batch = step_batch(POOL, step, 0, 3, 4, rank, world_size)
    return algorithm.plan(batch, SINGLE), batch, algorithm


def test_flow_grpo_trains_the_first_k_steps_in_order_never_the_last() -> None:
    plan, _, _ = plan_for(name="flow_grpo")
    assert plan.sde.all()
    assert torch.equal(plan.trained, torch.arange(9).expand(12, -1))


def test_flow_grpo_fast_trains_one_window_inside_its_range_with_ode_outside() -> None:
    starts = set()
    for step in range(1, 30):
        plan, _, _ = plan_for(step, name="flow_grpo_fast", window_size=3, window_range=(0, 3))
        start = int(plan.trained[0, 0])
        starts.add(start)
        assert torch.equal(plan.trained, torch.arange(start, start + 3).expand(12, -1))
        assert plan.sde.sum(dim=1).eq(3).all() and plan.sde[:, start : start + 3].all()
    assert starts == {0, 1, 2}


def test_dance_grpo_permutes_k_of_the_first_t_minus_1_steps_per_sample() -> None:
    plan, _, _ = plan_for(name="dance_grpo", noise_level=0.3, train_timesteps=5)
    assert plan.trained.shape == (12, 5) and plan.sde.all()
    assert int(plan.trained.max()) <= 8
    assert all(len(set(row.tolist())) == 5 for row in plan.trained)
    assert len({tuple(row.tolist()) for row in plan.trained}) > 1


def test_dance_grpo_permutation_does_not_depend_on_the_rank_layout() -> None:
    whole, _, _ = plan_for(name="dance_grpo", noise_level=0.3, train_timesteps=5)
    halves = [plan_for(rank=r, world_size=2, name="dance_grpo", noise_level=0.3, train_timesteps=5)[0] for r in (0, 1)]
    assert torch.equal(torch.cat([h.trained for h in halves]), whole.trained)


def test_flash_grpo_one_shared_step_per_prompt_weighted_by_inverse_c() -> None:
    plan, batch, algorithm = plan_for(step=3, name="flash_grpo", candidate_steps=5)
    assert plan.trained.shape == (12, 1) and int(plan.trained.max()) < 5
    assert plan.sde.sum(dim=1).eq(1).all()
    for group in batch.group_ids.unique():
        assert plan.trained[batch.group_ids == group].unique().numel() == 1
    inverse_c = 1 / score_factor("flash", algorithm.sigmas, plan.trained[:, 0], 0.0)
    assert plan.weights is not None
    assert torch.allclose(plan.weights.double(), inverse_c / inverse_c.mean(), atol=1e-6)
    assert abs(float(plan.weights.mean()) - 1) < 1e-6


def test_a_step_draws_distinct_prompts_while_the_pool_allows() -> None:
    for step in range(1, 20):
        assert len(set(step_batch(POOL[:4], step, 0, 4, 2, 0, 1).prompts)) == 4
    assert len(step_batch(POOL[:2], 1, 0, 3, 2, 0, 1).prompts) == 6


def test_dance_grpo_trains_upstream_s_six_tenths_of_the_first_t_minus_1_steps_by_default() -> None:
    plan, _, _ = plan_for(name="dance_grpo", noise_level=0.3, sampling_steps=16)
    assert plan.trained.shape == (12, 9)  # ⌊0.6 · 15⌋, DanceGRPO's timestep_fraction
    assert (plan.trained < 15).all()


def test_cps_replaces_the_gaussian_step_only_where_the_spec_selects_it() -> None:
    assert plan_for(name="flow_grpo", sampler="cps")[2].sde_kind == "cps"
    assert plan_for(name="flow_grpo_fast", sampler="cps")[2].sde_kind == "cps"
    assert plan_for(name="flow_grpo")[2].sde_kind == "flow_grpo"
