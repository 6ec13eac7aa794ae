"""FSDP2 gradients reduced once per optimizer step, and the collectives an FSDP job counts.

Under FSDP2 every backward reduce-scatters each unit's gradient: native's schedule, one reduction per
trained step. The Lean executors and jagg backward with reduction off (``set_requires_gradient_sync(False)``):
FSDP then leaves each parameter's full, unsharded gradient on its unsharded parameter, where Reweight
forms the corrected gradient from its provisional ones. :func:`reduce_scatter` then writes the sharded
gradients, one reduce-scatter per FSDP unit (the mean over ranks, as FSDP's own), once per optimizer
step (executors.md §3.4 step 4, Eq. 18). All-gathers and reduce-scatters are counted through FSDP2's
custom-collective hooks (``set_custom_all_gather`` / ``set_custom_reduce_scatter``).

The unsharded parameters are FSDP2's own (``FSDPParam._unsharded_param``): no public API hands them out.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.distributed.fsdp import FSDPModule
from torch.distributed.fsdp._fully_shard._fsdp_api import AllGather, ReduceScatter
from torch.distributed.tensor import DTensor


@dataclass
class CollectiveCounts:
    """Collectives issued on this rank since the job started."""

    all_gathers: int = 0  # parameter all-gathers (one per FSDP unit unsharded)
    reductions: int = 0  # gradient reductions (an FSDP unit's reduce-scatter, or DDP's all-reduce)

    def since(self, start: CollectiveCounts) -> dict[str, float]:
        return {
            "param_all_gathers": float(self.all_gathers - start.all_gathers),
            "grad_reductions": float(self.reductions - start.reductions),
        }

    def copy(self) -> CollectiveCounts:
        return CollectiveCounts(self.all_gathers, self.reductions)


class CountingAllGather(AllGather):
    def __init__(self, counts: CollectiveCounts) -> None:
        self.counts = counts

    def allocate(self, size: Sequence[int | torch.SymInt], *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(
        self, output_tensor: torch.Tensor, input_tensor: torch.Tensor, group: dist.ProcessGroup, async_op: bool = False
    ) -> Any:
        self.counts.all_gathers += 1
        return dist.all_gather_into_tensor(output_tensor, input_tensor, group=group, async_op=async_op)


class CountingReduceScatter(ReduceScatter):
    def __init__(self, counts: CollectiveCounts) -> None:
        self.counts = counts

    def allocate(self, size: Sequence[int | torch.SymInt], *, dtype: torch.dtype, device: torch.device) -> torch.Tensor:
        return torch.empty(*size, dtype=dtype, device=device)

    def __call__(
        self,
        output_tensor: torch.Tensor,
        input_tensor: torch.Tensor,
        group: dist.ProcessGroup,
        op: Any,
        async_op: bool = False,
    ) -> Any:
        self.counts.reductions += 1
        return dist.reduce_scatter_tensor(output_tensor, input_tensor, op=op, group=group, async_op=async_op)


def count_collectives(module: nn.Module, counts: CollectiveCounts) -> None:
    """Create the unsharded parameters (one all-gather and reshard per unit, uncounted, at set-up), then
    route every FSDP unit's all-gathers and reduce-scatters through counters."""
    for unit in units(module):
        unit.unshard()
        unit.reshard()
        unit.set_custom_all_gather(CountingAllGather(counts))
        unit.set_custom_reduce_scatter(CountingReduceScatter(counts))


def units(module: nn.Module) -> list[FSDPModule]:
    return [m for m in module.modules() if isinstance(m, FSDPModule)]


def reshard(module: nn.Module) -> None:
    """Free every unit's gathered weights (FSDP2 keeps the root's after a forward until a backward)."""
    for unit in units(module):
        unit.reshard()


@contextmanager
def reduction_deferred(module: nn.Module) -> Iterator[None]:
    """Backwards inside accumulate full gradients on the unsharded parameters, unreduced."""
    assert isinstance(module, FSDPModule)
    module.set_requires_gradient_sync(False)
    try:
        yield
    finally:
        module.set_requires_gradient_sync(True)


@contextmanager
def gathered_through_backward(module: nn.Module, sharded: bool) -> Iterator[None]:
    """Backwards inside leave each unit's weights gathered after its first backward until the block ends
    (``sharded``: the module is FSDP's; otherwise nothing to do).

    FSDP2 reshards a unit after each graph's backward through it, so one backward through two forwards of a
    unit (JAGG's group endpoints) would all-gather it twice; here once. The price: a unit's full weights
    stay from its first backward to the block's end (a deferred reduction already keeps its full gradient
    that long)."""
    if not sharded:
        yield
        return
    assert isinstance(module, FSDPModule)
    module.set_reshard_after_backward(False)
    try:
        yield
    finally:
        module.set_reshard_after_backward(True)
        reshard(module)


def managed(unit: FSDPModule) -> list[Any]:
    """The unit's own FSDP parameters (its subtree's, less those of nested units)."""
    group = unit._get_fsdp_state()._fsdp_param_group
    return list(group.fsdp_params) if group is not None else []


def unsharded_parameters(module: nn.Module, params: list[torch.Tensor]) -> list[nn.Parameter]:
    """The unsharded parameter FSDP2 backwards into for each sharded one (created by count_collectives)."""
    owners = {id(fsdp_param.sharded_param): fsdp_param for unit in units(module) for fsdp_param in managed(unit)}
    slots = []
    for param in params:
        fsdp_param = owners[id(param)]
        if not hasattr(fsdp_param, "_unsharded_param"):
            raise RuntimeError("FSDP's unsharded parameters exist only once the unit has been unsharded")
        slots.append(fsdp_param._unsharded_param)
    return slots


def reduce_scatter(
    module: nn.Module, params: list[torch.Tensor], grads: list[torch.Tensor | None], counts: CollectiveCounts
) -> None:
    """Average the full gradients ``grads`` over ranks into the sharded parameters' ``.grad``: one
    reduce-scatter per FSDP unit, shard r being chunk r of dim 0 (FSDP2's layout, padded to equal chunks)."""
    position = {id(p): n for n, p in enumerate(params)}
    for unit in units(module):
        mine = [f.sharded_param for f in managed(unit) if id(f.sharded_param) in position]
        if mine:
            reduce_unit(mine, [grads[position[id(p)]] for p in mine], counts)


def reduce_unit(params: list[torch.Tensor], grads: list[torch.Tensor | None], counts: CollectiveCounts) -> None:
    first = params[0]
    assert isinstance(first, DTensor)
    mesh, group = first.device_mesh, first.device_mesh.get_group()
    world, rank = group.size(), dist.get_rank(group)
    rows = [-(-p.shape[0] // world) for p in params]  # each rank's padded dim-0 chunk
    pieces = []
    for param, grad, chunk in zip(params, grads, rows, strict=True):
        full = torch.zeros(param.shape, dtype=param.dtype, device=first.to_local().device) if grad is None else grad
        padded = full.new_zeros((chunk * world, *param.shape[1:]))
        padded[: param.shape[0]] = full
        pieces.append(padded.reshape(world, -1))
    flat = torch.cat(pieces, dim=1).reshape(-1)
    out = flat.new_empty(flat.numel() // world)
    counts.reductions += 1
    dist.reduce_scatter_tensor(out, flat, op=dist.ReduceOp.AVG, group=group)
    offset = 0
    for param, chunk in zip(params, rows, strict=True):
        inner = int(torch.Size(param.shape[1:]).numel())
        mine = max(0, min(chunk, param.shape[0] - rank * chunk))  # rows this rank's shard really has
        local = out[offset : offset + mine * inner].reshape(mine, *param.shape[1:]).clone()
        offset += chunk * inner
        param.grad = DTensor.from_local(
            local, mesh, param.placements, run_check=False, shape=param.shape, stride=param.stride()
        )
