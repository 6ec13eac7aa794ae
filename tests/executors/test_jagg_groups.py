"""JAGG's routing pieces that the composed executors share (trainer/executors/jagg_groups.py), held to their
definitions on a hand-made plan: which (row, step) pairs keep a graph, which positions a routed group holds, the
plan sorted high noise first, and the two interpolated upstream sums of a group."""

from __future__ import annotations

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.jagg_groups import GroupUpstream, graph_mask, group_positions, routed_plan
from trainer.sampling.step_grid import StepGrid
from trainer.spec import JaggOptions

STEPS = 12
# Two rows of seven trained steps each, in training (not noise) order.
TRAINED = torch.tensor([[9, 1, 4, 7, 2, 10, 5], [10, 8, 6, 3, 0, 2, 5]])
# W = 3, K = 7: round(0.6 · ⌈7/3⌉) = 2 routed groups, positions 0-2 and 3-5; position 6 is unrouted.
OPTIONS = JaggOptions(group_width=3, jagg_frac=0.6)


def plan() -> StepPlan:
    return StepPlan(sde=torch.ones((2, STEPS), dtype=torch.bool), trained=TRAINED.clone())


def test_a_routed_plan_sorts_each_row_s_trained_steps_high_noise_first_and_counts_its_routed_groups() -> None:
    routed, groups = routed_plan(plan(), OPTIONS)
    assert groups == 2
    assert routed.trained.tolist() == [[1, 2, 4, 5, 7, 9, 10], [0, 2, 3, 5, 6, 8, 10]]


def test_a_plan_without_a_routed_group_keeps_its_training_order() -> None:
    unchanged, groups = routed_plan(plan(), JaggOptions(group_width=3, jagg_frac=0.0))
    assert groups == 0
    assert unchanged.trained.tolist() == TRAINED.tolist()


def test_a_routed_group_holds_the_next_w_sorted_positions() -> None:
    assert group_positions(OPTIONS, 0) == [0, 1, 2]
    assert group_positions(OPTIONS, 1) == [3, 4, 5]


def test_the_graph_mask_keeps_each_routed_group_s_two_ends_and_every_unrouted_step_only() -> None:
    routed, groups = routed_plan(plan(), OPTIONS)
    mask = graph_mask(routed, OPTIONS, groups, STEPS)
    assert mask.dtype == torch.bool
    assert mask.shape == (2, STEPS)
    # Positions 0, 2 (group 0's ends), 3, 5 (group 1's ends) and 6 (unrouted) of each sorted row.
    kept = [sorted(int(step) for step in row.nonzero().flatten()) for row in mask]
    assert kept == [[1, 4, 5, 9, 10], [0, 3, 5, 8, 10]]


def test_a_group_s_upstream_sums_weigh_each_step_by_its_sigma_s_share_of_the_group_s_span() -> None:
    sigmas = torch.linspace(1.0, 0.0, STEPS + 1, dtype=torch.float64) ** 2
    grid = StepGrid.build(sigmas, "flow_grpo", 0.7)
    first, middle, last = torch.tensor([1, 4]), torch.tensor([2, 6]), torch.tensor([4, 9])
    upstream = GroupUpstream(grid, first, last)
    generator = torch.Generator().manual_seed(0)
    s = {name: torch.randn(2, 3, 2, generator=generator) for name in ("first", "middle", "last")}
    for name, index in (("first", first), ("middle", middle), ("last", last)):
        upstream.add(s[name], index)
    g = grid.sigmas
    alpha = ((g[first] - g[middle]) / (g[first] - g[last])).reshape(2, 1, 1)
    base, corr = upstream.aggregates
    # alpha is 0 at the group's first step and 1 at its last.
    torch.testing.assert_close(base, s["first"] + (1 - alpha) * s["middle"])
    torch.testing.assert_close(corr, alpha * s["middle"] + s["last"])
