"""Group advantages (docs/algorithms.md §4) on hand-made groups."""

from __future__ import annotations

import torch

from trainer.advantages import group_advantages


def test_group_std_z_scores_each_group_on_its_own() -> None:
    rewards = torch.tensor([1.0, 3.0, 10.0, 30.0])
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_advantages(rewards, groups, global_std=False, clip=5.0)
    expected = torch.tensor([-1.0, 1.0, -1.0, 1.0])
    assert torch.allclose(adv.values, expected * torch.tensor([1 / 1.0001, 1 / 1.0001, 10 / 10.0001, 10 / 10.0001]))


def test_global_std_uses_one_population_std_with_per_prompt_means() -> None:
    rewards = torch.tensor([1.0, 3.0, 10.0, 14.0])
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_advantages(rewards, groups, global_std=True, clip=5.0)
    std = float(rewards.std(unbiased=False))
    assert torch.allclose(adv.values, torch.tensor([-1.0, 1.0, -2.0, 2.0]) / (std + 1e-4))


def test_groups_need_not_be_contiguous_and_ids_are_not_prompts() -> None:
    rewards = torch.tensor([1.0, 10.0, 3.0, 30.0])
    groups = torch.tensor([7, 2, 7, 2])
    adv = group_advantages(rewards, groups, global_std=False, clip=5.0)
    assert adv.values[0] < 0 < adv.values[2] and adv.values[1] < 0 < adv.values[3]


def test_zero_std_group_gets_zero_advantage_and_is_counted() -> None:
    rewards = torch.tensor([0.5, 0.5, 0.1, 0.9])
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_advantages(rewards, groups, global_std=True, clip=5.0)
    assert torch.equal(adv.values[:2], torch.zeros(2))
    assert adv.zero_std_frac == 0.5


def test_a_group_std_of_exactly_the_tolerance_still_counts_as_zero_std() -> None:
    """Rewards 0 and 2·10⁻¹² (float64) deviate by ±10⁻¹² from their mean, so the group std is 10⁻¹² exactly."""
    rewards = torch.tensor([0.0, 2e-12, 0.1, 0.9], dtype=torch.float64)
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_advantages(rewards, groups, global_std=False, clip=5.0)
    assert adv.zero_std_frac == 0.5


def test_global_std_advantage_clip_bites() -> None:
    rewards = torch.tensor([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 100.0] + [0.0] * 30)
    groups = torch.arange(40) // 10
    adv = group_advantages(rewards, groups, global_std=True, clip=5.0)
    assert float(adv.values.max()) == 5.0


def test_groups_of_one_fall_back_to_the_batch_z_score() -> None:
    rewards = torch.tensor([1.0, 2.0, 3.0])
    adv = group_advantages(rewards, torch.arange(3), global_std=False, clip=5.0)
    assert adv.values[0] < 0 == float(adv.values[1]) < adv.values[2]


def test_unbiased_group_std_divides_by_n_minus_1_as_dance_grpo_does() -> None:
    rewards = torch.tensor([1.0, 3.0, 10.0, 30.0])
    groups = torch.tensor([0, 0, 1, 1])
    adv = group_advantages(rewards, groups, global_std=False, clip=5.0, eps=1e-8, unbiased=True)
    # torch.std of [1, 3] is √2 (n − 1 = 1), of [10, 30] is 10√2: every |A| is 1/√2
    expected = torch.tensor([-1.0, 1.0, -1.0, 1.0]) / 2**0.5
    assert torch.allclose(adv.values, expected, atol=1e-6)
