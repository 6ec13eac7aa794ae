"""Which way a job's ranks hold the transformer, decided from its spec alone (torch-free, so the spec's own
rules can ask it: ``model.reference: cpu`` means nothing under FSDP). ``trainer/sharding.py`` acts on it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from trainer.spec.executor import FSDP_EXECUTORS

if TYPE_CHECKING:
    from trainer.spec.job import JobSpec

Strategy = Literal["single", "ddp", "fsdp"]


def sharding_choice(spec: JobSpec, world_size: int) -> tuple[Strategy, str]:
    """(strategy, why). ``model.sharding`` decides when set; ``auto`` takes FSDP for full fine-tuning on CUDA under
    the executors that run under it: native, and the Lean ones, jagg and its compositions, which reduce once per
    optimizer step (trainer/fsdp_gradients.py); digenrl handles gradients and weights itself. The forward-process
    family never gets FSDP: its old policy is a copy of the unsharded trainable weights
    (trainer/algorithms/old_policy.py), which is why its spec refuses 'fsdp'."""
    requested = spec.model.sharding
    if world_size == 1:
        return "single", "one rank"
    if requested != "auto":
        return requested, f"model.sharding is {requested!r}"
    if spec.model.finetune != "full":
        return "ddp", "LoRA: the adapter is small"
    if spec.resources.device_type != "cuda":
        return "ddp", "auto on CPU"
    if spec.algorithm.family == "forward":
        return "ddp", f"{spec.algorithm.name} keeps an unsharded copy of its old policy"
    if spec.executor.name not in FSDP_EXECUTORS:
        return "ddp", f"executor {spec.executor.name} handles gradients itself"
    return "fsdp", "full fine-tuning on CUDA"
