"""One backward through two forward graphs of an FSDP2 module (JAGG's group endpoints) all-gathers each unit once
inside ``gathered_through_backward``, where FSDP2 alone all-gathers it once per graph; the gradient is the same, and
every unit is sharded again after the block (two gloo ranks, the tiny SD3 transformer sharded as the trainer does)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.trainer.conftest import REPO


@pytest.mark.slow
def test_a_backward_through_two_graphs_all_gathers_each_unit_once_when_gathered(
    tmp_path: Path, tiny_model_dir: Path
) -> None:
    out = tmp_path / "report.json"
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    command = ["-m", "tests.trainer.fsdp_two_graphs", str(tiny_model_dir), str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result = subprocess.run([*launch, *command], cwd=REPO, env=env, capture_output=True, text=True, timeout=150)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(out.read_text())
    blocks = report["units"] - 1  # FSDP2 keeps the root unit gathered from its forward to the end of the backward
    assert report["plain_all_gathers"] == 2 * blocks
    assert report["gathered_all_gathers"] == blocks
    assert report["max_grad_difference"] == 0.0 and report["resharded_after"]
