"""Executor fixtures: the trainer's tiny model in a temporary SFUMATO_HOME, and small specs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.trainer.conftest import REPO, sfumato_home, tiny_model_dir, tiny_spec

__all__ = ["REPO", "audit_spec", "sfumato_home", "tiny_model_dir", "torchrun"]


def audit_spec(**sections: dict[str, Any]) -> dict[str, Any]:
    """A one-step, few-step spec: full fine-tuning (every tensor gets a gradient), T = 4."""
    base = {
        "model": {"finetune": "full", "lora_rank": None},
        "algorithm": {"sampling_steps": 4, "total_steps": 1, "prompts_per_step": 2, "group_size": 2},
        "samples": {"count": 0},
        "checkpoint": {"every": 0},
    }
    for key, value in sections.items():
        base[key] = {**base.get(key, {}), **value}
    return tiny_spec(**base)


def torchrun(
    tmp_path: Path, home: Path, spec: dict[str, Any], *command: str, timeout: int = 150
) -> subprocess.CompletedProcess[str]:
    """``torchrun --nproc-per-node 2 -m trainer <command> --spec …`` with two gloo ranks."""
    spec_path = tmp_path / "spec.json"
    spec_path.write_text(json.dumps(spec))
    env = {**os.environ, "SFUMATO_HOME": str(home)}
    env.pop("SFUMATO_API_URL", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc-per-node",
            "2",
            "-m",
            "trainer",
            *command,
            "--spec",
            str(spec_path),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
