"""The bench keeps freed host memory in the process, so a step reuses it instead of page-faulting it in."""

from __future__ import annotations

import ctypes.util
import subprocess
import sys

import pytest

# 128 blocks of 1 MiB held at once and freed, as a step's kept graphs are; then the page faults of holding
# them again (later rounds differ less: glibc's own thresholds adapt after a while).
HOLD_AGAIN = """
import resource, sys
import torch
from trainer.host_memory import keep_freed_memory
if sys.argv[1] == "keep" and not keep_freed_memory():
    sys.exit("mallopt refused")
held = [torch.ones(2**18) for _ in range(128)]
del held
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
held = [torch.ones(2**18) for _ in range(128)]
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""
PAGES = 128 * 2**20 // 4096


def faults_holding_again(mode: str) -> int:
    done = subprocess.run([sys.executable, "-c", HOLD_AGAIN, mode], capture_output=True, text=True, check=True)
    return int(done.stdout)


@pytest.mark.skipif(sys.platform != "linux" or ctypes.util.find_library("c") is None, reason="glibc's mallopt")
def test_memory_a_step_held_and_freed_is_reused_without_page_faults_once_freed_memory_is_kept() -> None:
    assert faults_holding_again("default") > PAGES // 2  # glibc handed it back to the kernel: faulted in again
    assert faults_holding_again("keep") < PAGES // 4
