"""The KL term's reference policy under full fine-tuning: the policy's starting weights, frozen.

Under FSDP it is made after the policy is sharded and sharded like it (each rank holds its shard of the frozen
weights, gathered one unit at a time during the reference forward), never as a full copy on the device: a meta
skeleton of the policy (no memory) is sharded, given local storage, and filled shard by shard from the policy's
own shards. Under LoRA no copy exists: the reference is the base model with the adapter disabled
(``TrainingJob.reference_velocity``).
"""

from __future__ import annotations

import copy

import torch
from torch import nn

from trainer.sharding import shard_module


def meta_skeleton(module: nn.Module) -> nn.Module:
    """A copy of ``module`` whose weights and buffers live on the meta device (no memory is allocated)."""
    memo: dict[int, object] = {}
    for param in module.parameters():
        memo[id(param)] = nn.Parameter(torch.empty_like(param, device="meta"), requires_grad=False)
    for buffer in module.buffers():
        memo[id(buffer)] = torch.empty_like(buffer, device="meta")
    return copy.deepcopy(module, memo)


def sharded_reference(
    skeleton: nn.Module, policy: nn.Module, compute_dtype: torch.dtype, device: torch.device
) -> nn.Module:
    """The skeleton sharded as ``policy`` is (shard_module), its local shards filled from the policy's. Every unit,
    the root too, reshards after its forward: FSDP2 keeps the root's weights gathered after a forward for the
    backward that follows, and the reference never runs one, so they would stay whole on every rank."""
    shard_module(skeleton, compute_dtype)
    skeleton.set_reshard_after_forward(True)  # type: ignore[operator]
    skeleton.to_empty(device=device)
    with torch.no_grad():
        for mine, theirs in zip(skeleton.parameters(), policy.parameters(), strict=True):
            mine.copy_(theirs)  # the same placements on the same mesh: a local copy
        for mine, theirs in zip(skeleton.buffers(), policy.buffers(), strict=True):
            mine.copy_(theirs)
    return skeleton.requires_grad_(False).eval()
