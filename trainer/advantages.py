"""Per-prompt group advantages (docs/algorithms.md §4).

Rewards and integer group ids are gathered from every rank first, so a group split across
ranks is normalised as one group. A group whose members all score the same gets A = 0: it adds
no policy gradient (a KL term still acts on it) and is counted in ``train/zero_std_frac``.

The rewards stay where they were scored (the job's device): the grouping is read from the host-side group ids
and only its index goes to the rewards' device, so the advantages are made there without a host read; the two
logged statistics are read once per step.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

EPS = 1e-4


@dataclass
class Advantages:
    values: torch.Tensor  # [N], clipped
    zero_std_frac: float
    group_std_mean: float


def group_advantages(
    rewards: torch.Tensor,
    group_ids: torch.Tensor,
    *,
    global_std: bool,
    clip: float,
    eps: float = EPS,
    unbiased: bool = False,
) -> Advantages:
    """``unbiased``: the std divides by n − 1 (DanceGRPO's torch.std) rather than n (Flow-GRPO's numpy std)."""
    rewards = rewards.double()
    groups, inverse = torch.unique(group_ids, return_inverse=True)
    inverse = inverse.to(rewards.device)
    sums = torch.zeros(len(groups), dtype=torch.float64, device=rewards.device)
    count = sums.clone().index_add_(0, inverse, torch.ones_like(rewards))
    mean = sums.clone().index_add_(0, inverse, rewards) / count
    centred = rewards - mean[inverse]
    squares = sums.clone().index_add_(0, inverse, centred**2)
    group_std = (squares / (count - 1 if unbiased else count)).sqrt()
    if len(groups) == len(rewards):  # groups of one: batch z-score
        centred = rewards - rewards.mean()
        std = rewards.std(unbiased=unbiased).expand_as(rewards)
    elif global_std:
        std = rewards.std(unbiased=unbiased).expand_as(rewards)
    else:
        std = group_std[inverse]
    values = (centred / (std + eps)).clamp(-clip, clip).float()
    zero = (group_std <= 1e-12) & (count > 1)
    return Advantages(values, float(zero.double().mean()), float(group_std.mean()))
