"""Checkpoints for exact resume, and the final model export.

A checkpoint holds the trainable weights, the optimizer state, the RNG states and the step, and the forward
family's copies of the weights (its old policy, AWM's EMA) that a resumed run must continue from.
It is written to a temporary folder and renamed into ``checkpoints/step-N``, so a crash never
leaves a half-written checkpoint that ``--resume`` would pick up. Under FSDP the weights and the
optimizer state are gathered to full tensors first (a collective every rank takes part in), so
the files hold ordinary tensors keyed by parameter name.
"""

from __future__ import annotations

import json
import random
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from safetensors.torch import load_file, save_file
from torch import nn

from trainer.algorithms.old_policy import OldPolicy
from trainer.sharding import full_optimizer_state, full_state, load_full_optimizer_state, load_full_state, plain_copy

WEIGHTS = "trainable.safetensors"
COPIES = "policy_copies.safetensors"  # '{kind}.{index}': each copy's tensors in the trainable parameters' order


def trainable_state(module: nn.Module) -> dict[str, torch.Tensor]:
    return {name: p.detach().cpu().contiguous() for name, p in module.named_parameters() if p.requires_grad}


@dataclass
class TrainingState:
    """What a checkpoint stores of the model and optimizer, already on the CPU of rank 0."""

    weights: dict[str, torch.Tensor]
    optimizer: dict
    copies: dict[str, torch.Tensor] = field(default_factory=dict)  # policy_copies_state of the job's copies


def policy_copies_state(copies: Mapping[str, OldPolicy]) -> dict[str, torch.Tensor]:
    return {f"{kind}.{i}": value for kind, copy in copies.items() for i, value in enumerate(copy.state())}


def training_state(module: nn.Module, optimizer: torch.optim.Optimizer, fsdp: bool) -> TrainingState:
    """Under FSDP every rank must call this (the gather is a collective); rank 0 gets the state."""
    if fsdp:
        weights = {name: value.contiguous() for name, value in full_state(module).items()}
        return TrainingState(weights, full_optimizer_state(module, optimizer))
    return TrainingState(trainable_state(module), optimizer.state_dict())


def save_checkpoint(output_dir: Path, step: int, state: TrainingState) -> Path:
    root = output_dir / "checkpoints"
    target = root / f"step-{step}"
    staging = root / f".step-{step}.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    save_file(state.weights, str(staging / WEIGHTS))
    torch.save(state.optimizer, staging / "optimizer.pt")
    if state.copies:
        save_file(state.copies, str(staging / COPIES))
    rng = {"torch": torch.get_rng_state(), "python": random.getstate(), "numpy": np.random.get_state()}
    if torch.cuda.is_available():
        rng["cuda"] = torch.cuda.get_rng_state_all()
    torch.save(rng, staging / "rng.pt")
    (staging / "state.json").write_text(json.dumps({"step": step}))
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def latest_checkpoint(output_dir: Path) -> Path | None:
    root = output_dir / "checkpoints"
    if not root.is_dir():
        return None
    done = [p for p in root.glob("step-*") if (p / "state.json").exists()]
    return max(done, key=lambda p: int(p.name.removeprefix("step-")), default=None)


def load_checkpoint(path: Path, module: nn.Module, optimizer: torch.optim.Optimizer, fsdp: bool = False) -> int:
    """Restore weights, optimizer and RNG; return the step the checkpoint was taken after.
    Every rank reads the files; under FSDP each keeps its own shard."""
    weights = load_file(str(path / WEIGHTS))
    optimizer_state = torch.load(path / "optimizer.pt", weights_only=False)
    if fsdp:
        load_full_state(module, weights)
        load_full_optimizer_state(module, optimizer, optimizer_state)
    else:
        parameters = dict(module.named_parameters())
        with torch.no_grad():
            for name, value in weights.items():
                parameters[name].copy_(value)
        optimizer.load_state_dict(optimizer_state)
    rng = torch.load(path / "rng.pt", weights_only=False)
    torch.set_rng_state(rng["torch"])
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])
    if "cuda" in rng and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])
    return int(json.loads((path / "state.json").read_text())["step"])


def load_policy_copies(path: Path, copies: Mapping[str, OldPolicy], parameters: list[torch.Tensor]) -> list[str]:
    """Restore each copy (old policy, EMA) from the checkpoint. A copy the checkpoint lacks (one written before
    copies were saved, or by a job that kept none) restarts from the restored weights; its kind is returned."""
    saved = load_file(str(path / COPIES)) if (path / COPIES).exists() else {}
    missing = []
    for kind, copy in copies.items():
        values = [saved.get(f"{kind}.{i}") for i in range(len(copy.weights))]
        if any(value is None for value in values):
            copy.restart(parameters)
            missing.append(kind)
        else:
            copy.load(values)  # type: ignore[arg-type]
    return missing


def export_model(module: nn.Module, directory: Path, weights: dict[str, torch.Tensor] | None = None) -> None:
    """``save_pretrained``: the LoRA adapter (PEFT) or the full transformer (diffusers). Under FSDP pass
    the gathered ``weights``: they go into an ordinary unsharded copy, which is what gets saved."""
    shutil.rmtree(directory, ignore_errors=True)
    target = module if weights is None else plain_copy(module, weights)
    target.save_pretrained(directory)  # type: ignore[operator]
