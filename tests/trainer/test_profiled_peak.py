"""The step peak read from the profiler's raw records is the figure its function tree gives (per-op net
allocations in the order of the ops' starts): the bench and the advisor's probe report that one definition."""

from __future__ import annotations

import gc

import torch
from torch.autograd.profiler import profile as autograd_profile
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


def test_a_measured_step_leaves_no_profiler_results_for_the_exit_collection_to_free() -> None:
    """Results freed by the interpreter's last collection crash the process at exit (SIGSEGV)."""
    gc.collect()
    gc.disable()  # the profile object is in a reference cycle: only an explicit release frees its results now
    try:
        peak_step_bytes(lambda: torch.ones(1024).sum())
        holding = [o for o in gc.get_objects() if isinstance(o, autograd_profile) and o.kineto_results is not None]
    finally:
        gc.enable()
    assert holding == []
