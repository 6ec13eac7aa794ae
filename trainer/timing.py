"""The one clock every timed phase reads (the executors' phase timers, the run's step time, the bench's unit
costs, the probe's steps).

CUDA runs kernels asynchronously: a host clock read right after a launch measures the launch, not the work, so
each reading first waits for the device's queued work (``torch.cuda.synchronize``). On the CPU, and on the
``meta`` device, ops run when they are called and the wait is a no-op. The wait makes each phase's time its own:
what a phase queued is paid inside it, never carried into the next.
"""

from __future__ import annotations

import time

import torch


def device_seconds(device: torch.device) -> float:
    """A monotonic clock in seconds, read once ``device`` has finished every operation queued on it."""
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter()
