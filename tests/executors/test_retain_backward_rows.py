"""lean_retain's backward does native's work: only rows that train at a step carry a graph there, and
every kept graph is backwarded once, so a hook on one LoRA layer counts the same rows in backward as
under native's re-forwards, whether every row trains the same steps (Flow-GRPO) or its own
(DanceGRPO, Flash-GRPO)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec
from trainer.audit import AuditSession
from trainer.spec import parse_spec

ALGORITHMS = {
    "flow_grpo": {},
    "dance_grpo": {"name": "dance_grpo", "train_timesteps": 2, "global_std": False, "group_size": 4},
    "flash_grpo": {"name": "flash_grpo", "candidate_steps": 3, "prompts_per_step": 3, "group_size": 2},
}


def backward_rows(session: AuditSession, name: str) -> int:
    """Rows of the gradients leaving one LoRA layer over one training step of ``name``."""
    layer = next(m for n, m in session.job.policy.named_modules() if n.endswith("lora_A.default"))
    rows: list[int] = []

    def count(module: torch.nn.Module, inputs: Any, output: torch.Tensor) -> None:
        if output.requires_grad:
            output.register_hook(lambda grad: rows.append(grad.shape[0]))

    handle = layer.register_forward_hook(count)
    try:
        session.capture(name)
    finally:
        handle.remove()
    return sum(rows)


@pytest.mark.parametrize("algorithm", list(ALGORITHMS.values()), ids=list(ALGORITHMS))
def test_retain_backwards_as_many_rows_through_a_lora_layer_as_native(
    sfumato_home: Path, tiny_model_dir: Path, algorithm: dict[str, Any]
) -> None:
    spec = parse_spec(audit_spec(model={"finetune": "lora", "lora_rank": 4}, algorithm=algorithm))
    session = AuditSession(spec, ["native", "lean_retain"])
    native, retain = backward_rows(session, "native"), backward_rows(session, "lean_retain")
    samples, trained = spec.algorithm.prompts_per_step * spec.algorithm.group_size, spec.algorithm.train_timesteps
    print(f"{spec.algorithm.name}: rows in backward native {native}, lean_retain {retain}")
    assert native == samples * trained  # one re-forward row per sample and trained step
    assert retain == native
