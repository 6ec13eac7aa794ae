"""A CPU step's peak memory above its start, from the torch profiler's allocation records (profile_memory).

The definition ``make bench`` reports and the advisor's probe predicts: each op's net allocation (what the
profiler calls its self CPU memory usage: the allocations and frees inside it, less its children's), placed at
the op's start, summed in time order; the peak is the largest running total. An allocation outside every op
counts on its own, at its own time. ``prof.events()`` gives the same figure through its function tree, which
takes seconds to build per step (about 10 s for one lean_reweight step of the tiny model on a loaded 2-core
VM); reading the raw records, each allocation goes to its innermost enclosing op in one sweep.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any

from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

MEMORY_RECORD = "[memory]"


def peak_of_records(records: Iterable[Any]) -> int:
    """The largest running total of per-op net allocations, in the order of the ops' starts."""
    timeline: list[tuple[int, int, int, int]] = []  # (time, 0 = op opens | 1 = allocation, -end, bytes)
    for record in records:
        if record.name() == MEMORY_RECORD:
            timeline.append((record.start_ns(), 1, 0, record.nbytes()))
        elif record.device_type() == DeviceType.CPU:
            timeline.append((record.start_ns(), 0, -record.end_ns(), 0))
    timeline.sort()
    open_ops: list[tuple[int, int, int]] = []  # (start, end, index), innermost last
    net: dict[tuple[int, int], int] = defaultdict(int)  # (time placed at, the op's or own record's index) → bytes
    for index, (time, kind, negative_end, nbytes) in enumerate(timeline):
        if kind == 0:
            open_ops.append((time, -negative_end, index))
            continue
        while open_ops and open_ops[-1][1] < time:
            open_ops.pop()
        net[(open_ops[-1][0], open_ops[-1][2]) if open_ops else (time, index)] += nbytes
    live = peak = 0
    for _, change in sorted((at, change) for (at, _), change in net.items() if change):
        live += change
        peak = max(peak, live)
    return peak


def peak_step_bytes(action: Callable[[], object]) -> int:
    """Run ``action`` under the profiler; its peak live bytes above the start.

    The results are released before returning. The profile object sits in a reference cycle (its action map holds
    its own bound methods), so otherwise its results live until a garbage collection, and when that is the
    interpreter's last one, at exit, freeing them crashes the process (SIGSEGV in ``~ProfilerResult``: torch 2.13,
    seen on digenrl's generator rank, whose steps leave little other garbage to trigger a collection earlier)."""
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        action()
    try:
        return peak_of_records(prof.profiler.kineto_results.events())  # type: ignore[union-attr]
    finally:
        prof.profiler.kineto_results = None  # type: ignore[union-attr]
