"""Process group set-up under torchrun and the few collectives the trainer uses.

With one process no group is created and every collective is the identity, so the same
training loop runs bare (``python -m trainer``) and under ``torchrun``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist


@dataclass
class Distributed:
    rank: int
    world_size: int
    local_rank: int
    device: torch.device

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def all_gather(self, tensor: torch.Tensor) -> torch.Tensor:
        """Concatenate equal-shaped tensors from every rank along dim 0, in rank order."""
        if self.world_size == 1:
            return tensor
        parts = [torch.empty_like(tensor) for _ in range(self.world_size)]
        dist.all_gather(parts, tensor.contiguous())
        return torch.cat(parts)

    def all_reduce_mean(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.world_size == 1:
            return tensor
        out = tensor.clone()
        dist.all_reduce(out)
        return out / self.world_size

    def all_reduce_max(self, tensor: torch.Tensor) -> torch.Tensor:
        if self.world_size == 1:
            return tensor
        out = tensor.clone()
        dist.all_reduce(out, op=dist.ReduceOp.MAX)
        return out

    def broadcast(self, tensor: torch.Tensor) -> torch.Tensor:
        """Rank 0's value on every rank."""
        if self.world_size > 1:
            dist.broadcast(tensor, src=0)
        return tensor

    def to_main(self, value: Any, source: int) -> Any:
        """Rank `source`'s `value` on rank 0, point to point and pickled (None on the other ranks)."""
        if source == 0 or self.world_size == 1:
            return value if self.is_main else None
        box = [value]
        if self.rank == source:
            dist.send_object_list(box, dst=0)
        elif self.is_main:
            dist.recv_object_list(box, src=source)
            return box[0]
        return None

    def barrier(self) -> None:
        if self.world_size > 1:
            dist.barrier()

    def close(self) -> None:
        if self.world_size > 1 and dist.is_initialized():
            dist.destroy_process_group()


# The backend of each device's tensors: on CUDA, NCCL for device tensors and gloo for the host's (rewards,
# sample ids, digenrl's units and weight pushes are CPU tensors); torch picks the backend by the tensor's device.
BACKENDS = {"cpu": "gloo", "cuda": "cpu:gloo,cuda:nccl"}


def init_distributed(device_type: str) -> Distributed:
    """The process group of ``BACKENDS[device_type]``; on CPU the cores are split between the host's ranks
    unless OMP_NUM_THREADS says otherwise."""
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)
        device = torch.device("cuda", local_rank)
    else:
        device = torch.device("cpu")
        if "OMP_NUM_THREADS" not in os.environ:  # an explicit setting wins (a shared machine wants 1)
            local_world = int(os.environ.get("LOCAL_WORLD_SIZE", str(world_size)))
            torch.set_num_threads(max(1, (os.cpu_count() or 1) // local_world))
    if world_size > 1:
        dist.init_process_group(backend=BACKENDS[device_type], timeout=timedelta(minutes=30))
    return Distributed(rank, world_size, local_rank, device)
