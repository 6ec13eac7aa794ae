"""The KL term's reference policy under full fine-tuning: the policy's starting weights, frozen.

Under FSDP it is made after the policy is sharded and sharded like it (each rank holds its shard of the frozen
weights, gathered one unit at a time during the reference forward), never as a full copy on the device: a meta
skeleton of the policy (no memory) is sharded, given local storage, and filled shard by shard from the policy's
own shards. On one rank or under DDP it is a frozen copy on the device (``model.reference: device``) or, with
``model.reference: cpu``, a host copy of the trainable weights (``HostReference``) swapped into the policy for each
reference forward, as Flow-Factory's ``ref_param_device: cpu`` does (docs/memory-and-timing.md). Under LoRA no copy
exists: the reference is the base model with the adapter disabled (``TrainingJob.reference_weights``).
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager

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


def host_buffer(like: torch.Tensor) -> torch.Tensor:
    """An empty host tensor shaped as ``like``, page-locked where an accelerator copies to and from it."""
    return torch.empty(like.shape, dtype=like.dtype, device="cpu", pin_memory=torch.cuda.is_available())


class HostReference:
    """The starting trainable weights in host memory, and a host stash as large: the device holds one copy of the
    weights at any moment (Flow-Factory's ``EMAModuleWrapper(decay=0)`` on the CPU, its stash made per use here
    made once, so no step allocates it)."""

    def __init__(self, parameters: list[torch.Tensor]) -> None:
        self.weights = [host_buffer(p) for p in parameters]
        self.stash = [host_buffer(p) for p in parameters]
        with torch.no_grad():
            for weight, param in zip(self.weights, parameters, strict=True):
                weight.copy_(param)

    @contextmanager
    def swapped_in(self, parameters: list[torch.Tensor]) -> Iterator[None]:
        """The parameters hold the reference's weights inside (a no-grad forward only), their own after, bit for bit.

        ``.data`` copies leave autograd's version counters alone: a graph kept across the block (lean_retain's)
        saved these parameters, and finds the same values in them when it runs backward. The copies queue on the
        device's stream in order, so the pinned ones need not wait for the host. Inside, the parameters do not
        require grad: autocast keeps its compute-precision cast of a weight that does for as long as its region
        lasts, so the forward would hold a cast of every weight at once (the device copy's are cast op by op),
        and a cast cached by an enclosing region would be the policy's."""
        pinned = torch.cuda.is_available()
        trained = [param.requires_grad for param in parameters]
        for stash, param, weight in zip(self.stash, parameters, self.weights, strict=True):
            stash.copy_(param.data, non_blocking=pinned)
            param.data.copy_(weight, non_blocking=pinned)
            param.requires_grad_(False)
        try:
            yield
        finally:
            for stash, param, flag in zip(self.stash, parameters, trained, strict=True):
                param.data.copy_(stash, non_blocking=pinned)
                param.requires_grad_(flag)
