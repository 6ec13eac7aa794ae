"""Group advantages against docs/algorithms.md §4, recomputed in plain float64 Python: per-prompt means, the
group's or the whole step's std (population or n − 1), ε added, clipped to ±A_max; groups of one fall back to
the batch z-score; the zero-std fraction and the mean group std as logged."""

from __future__ import annotations

import math
import random

import pytest
import torch

from trainer.advantages import group_advantages
from trainer.spec import AlgorithmSpec


def std(values: list[float], unbiased: bool) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - unbiased))


def reference(
    rewards: list[float], groups: list[int], global_std: bool, clip: float, eps: float, unbiased: bool
) -> tuple[list[float], float, float]:
    """(A, zero-std fraction, mean group std)."""
    members = {g: [r for r, h in zip(rewards, groups, strict=True) if h == g] for g in groups}
    group_std = {g: std(values, unbiased) if len(values) > 1 else 0.0 for g, values in members.items()}
    if len(members) == len(rewards):  # groups of one: batch z-score
        means = dict.fromkeys(groups, sum(rewards) / len(rewards))
        spread = dict.fromkeys(groups, std(rewards, unbiased))
    else:
        means = {g: sum(values) / len(values) for g, values in members.items()}
        spread = dict.fromkeys(groups, std(rewards, unbiased)) if global_std else group_std
    values = [max(-clip, min(clip, (r - means[g]) / (spread[g] + eps))) for r, g in zip(rewards, groups, strict=True)]
    zero = sum(1 for g, s in group_std.items() if s <= 1e-12 and len(members[g]) > 1) / len(members)
    return values, zero, sum(group_std.values()) / len(group_std)


def shuffled_groups(count: int, size: int, seed: int) -> list[int]:
    """Group ids 10, 20, … in a seeded order: groups need not be contiguous, ids need not be 0..n−1."""
    ids = [10 * (n + 1) for n in range(count) for _ in range(size)]
    random.Random(seed).shuffle(ids)
    return ids


CASES = [
    ("flow_grpo", 4, 3),  # global population std, ε = 1e-4
    ("dance_grpo", 4, 3),  # group std, unbiased, ε = 1e-8
    ("flow_grpo", 6, 5),
    ("dance_grpo", 2, 6),
    ("flash_grpo", 8, 2),
]


@pytest.mark.parametrize(("name", "size", "count"), CASES)
@pytest.mark.parametrize("global_std", [True, False], ids=["global-std", "group-std"])
def test_advantages_are_the_per_prompt_z_score_of_the_formula(
    name: str, size: int, count: int, global_std: bool
) -> None:
    spec = AlgorithmSpec(name=name, group_size=size, global_std=global_std)  # type: ignore[arg-type]
    rng = random.Random(size * 100 + count)
    rewards = [rng.gauss(0.0, 1.0) * (1 + n % 3) for n in range(size * count)]
    groups = shuffled_groups(count, size, seed=count)
    got = group_advantages(
        torch.tensor(rewards, dtype=torch.float32),
        torch.tensor(groups),
        global_std=global_std,
        clip=spec.adv_clip,
        eps=spec.advantage_eps,
        unbiased=bool(spec.unbiased_std),
    )
    rounded = torch.tensor(rewards, dtype=torch.float32).double().tolist()  # the trainer's rewards arrive as fp32
    values, zero, group_std = reference(
        rounded, groups, global_std, spec.adv_clip, spec.advantage_eps, bool(spec.unbiased_std)
    )
    assert got.values.double().tolist() == pytest.approx(values, rel=1e-6, abs=1e-7)
    assert got.zero_std_frac == zero and got.group_std_mean == pytest.approx(group_std, rel=1e-12)


def test_dance_grpo_divides_by_n_minus_one_and_flow_grpo_by_n_as_their_code_does() -> None:
    assert AlgorithmSpec(name="dance_grpo").unbiased_std and not AlgorithmSpec(name="dance_grpo").global_std
    assert not AlgorithmSpec(name="flow_grpo").unbiased_std and AlgorithmSpec(name="flow_grpo").global_std
    rewards, groups = [0.0, 1.0, 3.0, 8.0], [0, 0, 1, 1]
    for unbiased in (False, True):
        got = group_advantages(
            torch.tensor(rewards), torch.tensor(groups), global_std=False, clip=5.0, unbiased=unbiased
        )
        want, _, _ = reference(rewards, groups, False, 5.0, 1e-4, unbiased)
        assert got.values.double().tolist() == pytest.approx(want, rel=1e-6)


def test_a_global_std_lets_the_advantage_clip_bite_on_both_sides_as_the_formula_does() -> None:
    """One loud group among quiet ones: its |A| exceeds A_max = 5 under a global std (no Samuelson bound)."""
    rewards = [0.0] * 76 + [-100.0, 100.0, 0.0, 0.0]
    groups = [n // 4 for n in range(80)]
    got = group_advantages(torch.tensor(rewards), torch.tensor(groups), global_std=True, clip=5.0)
    want, zero, _ = reference(rewards, groups, True, 5.0, 1e-4, False)
    assert got.values.double().tolist() == pytest.approx(want, rel=1e-6, abs=1e-7)
    assert min(want) == -5.0 and max(want) == 5.0 and zero == 0.95


@pytest.mark.parametrize("unbiased", [False, True])
def test_groups_of_one_take_the_batch_z_score(unbiased: bool) -> None:
    rewards = [0.3, -1.2, 2.5, 0.1, 0.9]
    got = group_advantages(torch.tensor(rewards), torch.arange(5), global_std=False, clip=5.0, unbiased=unbiased)
    want, zero, _ = reference(rewards, list(range(5)), False, 5.0, 1e-4, unbiased)
    assert got.values.double().tolist() == pytest.approx(want, rel=1e-6) and zero == got.zero_std_frac == 0.0
