"""Executor fixtures: the trainer's tiny model in a temporary SFUMATO_HOME, and small specs."""

from __future__ import annotations

from typing import Any

from tests.trainer.conftest import (
    REPO,
    edit_set_dir,
    kontext_dir,
    qwen_edit_dir,
    sd35_dirs,
    sfumato_home,
    tiny_model_dir,
    tiny_spec,
    torchrun,
    wan22_dir,
    wan_i2v_dir,
)

__all__ = [
    "REPO",
    "audit_spec",
    "edit_set_dir",
    "kontext_dir",
    "qwen_edit_dir",
    "sd35_dirs",
    "sfumato_home",
    "tiny_model_dir",
    "torchrun",
    "wan22_dir",
    "wan_i2v_dir",
]


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
