"""The command line that runs ``python -m trainer …`` on ``ranks`` local ranks, as the benches launch it."""

from __future__ import annotations

import sys


def trainer_command(ranks: int, *args: str) -> list[str]:
    """One rank: the trainer in this interpreter; more: under ``torchrun --standalone`` (gloo on the CPU)."""
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={ranks}"]
    return [*(launcher if ranks > 1 else [sys.executable]), "-m", "trainer", *args]
