"""The step peak read from the profiler's raw records is the figure its function tree gives (per-op net
allocations in the order of the ops' starts): the bench and the advisor's probe report that one definition."""

from __future__ import annotations

import torch
from torch.profiler import ProfilerActivity, profile

from trainer.profiled_peak import peak_of_records, peak_step_bytes


def training_step() -> None:
    """Nested ops with temporaries, a backward and an optimizer step: what a trainer step is made of."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(256, 512), torch.nn.GELU(), torch.nn.LayerNorm(512))
    optimizer = torch.optim.AdamW(model.parameters())
    for _ in range(2):
        loss = model(torch.randn(64, 256)).softmax(-1).log().mean()
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)


def function_tree_peak(prof: profile) -> int:
    changes = sorted((e.time_range.start, e.self_cpu_memory_usage) for e in prof.events() if e.self_cpu_memory_usage)
    live = peak = 0
    for _, change in changes:
        live += change
        peak = max(peak, live)
    return peak


def test_the_raw_records_peak_equals_the_function_trees() -> None:
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        training_step()
    assert peak_of_records(prof.profiler.kineto_results.events()) == function_tree_peak(prof)


def test_a_step_holding_a_tensor_peaks_at_least_at_its_size() -> None:
    held: list[torch.Tensor] = []
    assert peak_step_bytes(lambda: held.append(torch.ones(2**20))) >= 4 * 2**20
