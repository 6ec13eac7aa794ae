"""``python -m tests.executors.recording_collectives <trainer command…>``: the trainer with torch.distributed's
collectives and point-to-point calls recorded.

Each call appends one JSON line to ``$SFUMATO_COLLECTIVES_LOG.<rank>``: the call, the device types of its
tensors, and the device types its group's backend serves (the group's own backend map, as torch reads it
to route a tensor, e.g. ``cpu:gloo,cuda:nccl``). The test judges the log after the run, so a bad call
neither hangs the other rank nor hides behind the backend's own error.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import torch
import torch.distributed as dist

RECORDED = (
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "reduce_scatter_tensor",
    "broadcast",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "isend",
    "irecv",
)


def served_devices(group: dist.ProcessGroup | None) -> list[str]:
    """The device types the group's backend map routes, e.g. ["cpu", "cuda"] for ``cpu:gloo,cuda:nccl``."""
    config = dist.get_backend_config(group)
    return sorted(entry.split(":")[0] for entry in config.split(","))


def tensors_in(value: Any) -> list[torch.Tensor]:
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, list | tuple):
        return [t for item in value for t in tensors_in(item)]
    return []


def recording(name: str, call: Callable[..., Any], log: Any) -> Callable[..., Any]:
    signature = inspect.signature(call)

    @functools.wraps(call)
    def recorded(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        group = bound.arguments.get("group")
        tensors = [t for value in bound.arguments.values() for t in tensors_in(value)]
        entry = {"call": name, "devices": sorted({t.device.type for t in tensors}), "served": served_devices(group)}
        log.write(json.dumps(entry) + "\n")
        log.flush()
        return call(*args, **kwargs)

    return recorded


def main() -> int:
    log = open(f"{os.environ['SFUMATO_COLLECTIVES_LOG']}.{os.environ['RANK']}", "a")  # noqa: SIM115 (open for the run)
    for name in RECORDED:
        setattr(dist, name, recording(name, getattr(dist, name), log))
    from trainer.__main__ import main as trainer_main

    return trainer_main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
