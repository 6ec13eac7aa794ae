"""A training step's memory: the one definition the run, the bench, the probe and ``make gpu-check`` report, and
the step's memory by component (docs/trainer.md, "Memory").

A step's peak is the most bytes live tensors hold on the job's device at any moment of the step:

- ``start``: what is held as the step starts. CUDA: the caching allocator's allocated bytes. CPU: the job's own
  tensors (every module's weights and buffers, the optimizer state, gradients still held, cached embeddings),
  since the CPU allocator keeps no count.
- ``rise``: the largest rise above ``start`` during the step, counted afresh at every step's start. CUDA:
  ``max_memory_allocated`` after ``reset_peak_memory_stats``. CPU: the torch profiler's allocation records
  (trainer/profiled_peak.py).
- ``peak = start + rise`` (``memory/peak_bytes``).

The components are measured on their own, not derived from the peak, so that their sum checks it:
``parameters`` (every module's weights and buffers on the device, the reference's apart), ``reference`` (the KL
reference's frozen copy on the device: its local shards under FSDP, nothing when it is kept on the host or is the
base under LoRA), ``optimizer_state`` (held as the step starts:
AdamW makes its state in its first step, after that step's peak), ``gradients`` (the most
gradient bytes held at once: ``.grad`` and an executor's gradient buffers), ``retained_graphs`` (the tensors
autograd saved for graphs that an executor keeps past the forward that built them: lean_retain's), ``activations``
(the most bytes autograd held saved for backward otherwise, counted by a saved-tensor hook, plus the step's
trajectory of latents and images) and ``embeddings`` (the cached prompt embeddings).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

import torch
from torch import nn

from trainer.profiled_peak import peak_step_bytes

if TYPE_CHECKING:
    from trainer.job import TrainingJob

Result = TypeVar("Result")
COMPONENTS = (
    "parameters",
    "reference",
    "gradients",
    "optimizer_state",
    "retained_graphs",
    "activations",
    "embeddings",
)


def local_part(tensor: torch.Tensor) -> torch.Tensor:
    """What a tensor holds on this rank (an FSDP DTensor: its local shard)."""
    return tensor.to_local() if hasattr(tensor, "to_local") else tensor


def local_bytes(tensor: torch.Tensor) -> int:
    local = local_part(tensor)
    return local.numel() * local.element_size()


def distinct_bytes(tensors: Iterable[torch.Tensor | None]) -> int:
    seen: set[int] = set()
    total = 0
    for tensor in tensors:
        if tensor is not None and id(tensor) not in seen:
            seen.add(id(tensor))
            total += local_bytes(tensor)
    return total


class Saved:
    """One tensor autograd saved for backward; counted while the graph holding it lives."""

    __slots__ = ("key", "meter", "tensor")

    def __init__(self, meter: StepMeter, key: int, tensor: torch.Tensor) -> None:
        self.meter, self.key, self.tensor = meter, key, tensor

    def __del__(self) -> None:
        self.meter.release(self.key)


class StepMeter:
    """What one step held, component by component: the saved-for-backward bytes (a saved-tensor hook counting each
    storage once, weights excepted), the most gradient bytes held, and the retained graphs an executor marks."""

    def __init__(self) -> None:
        self.active = False
        self.weights: set[int] = set()
        self.counts: dict[int, int] = {}
        self.sizes: dict[int, int] = {}
        self.live = 0
        self.saved_peak = 0
        self.retained = 0
        self.gradients = 0
        self.last: StepMemory | None = None  # the last measured step's memory (lean_retain's budget reads it)

    def start(self, weights: Iterable[torch.Tensor]) -> None:
        self.active = True
        local = [local_part(t) for t in weights]
        self.weights = {t.untyped_storage().data_ptr() for t in local if t.device.type != "meta"}
        self.counts, self.sizes = {}, {}
        self.live = self.saved_peak = self.retained = self.gradients = 0

    def stop(self) -> None:
        self.active = False

    def pack(self, tensor: torch.Tensor) -> Any:
        if not self.active or tensor.device.type == "meta":
            return tensor
        storage = tensor.untyped_storage()
        key = storage.data_ptr()
        if key in self.weights:
            return tensor
        if key not in self.counts:
            self.counts[key], self.sizes[key] = 0, storage.nbytes()
            self.live += self.sizes[key]
            self.saved_peak = max(self.saved_peak, self.live)
        self.counts[key] += 1
        return Saved(self, key, tensor)

    @staticmethod
    def unpack(packed: Any) -> torch.Tensor:
        return packed.tensor if isinstance(packed, Saved) else packed

    def release(self, key: int) -> None:
        if key not in self.counts:
            return
        self.counts[key] -= 1
        if not self.counts[key]:
            del self.counts[key]
            self.live -= self.sizes.pop(key)

    def mark_retained(self) -> None:
        """The executor keeps every graph now alive until the advantages arrive (lean_retain, after its rollout)."""
        if self.active:
            self.retained = max(self.retained, self.live)

    def note_gradients(self, held: int) -> None:
        """``held`` gradient bytes are live at once now (``.grad`` and any gradient buffers)."""
        if self.active:
            self.gradients = max(self.gradients, held)

    @contextmanager
    def counting(self) -> Iterator[None]:
        with torch.autograd.graph.saved_tensors_hooks(self.pack, self.unpack):
            yield


@dataclass
class StepMemory:
    """One step's memory (bytes): the measured start and rise, and the components measured on their own."""

    start: int
    rise: int
    parameters: int = 0
    reference: int = 0
    gradients: int = 0
    optimizer_state: int = 0
    retained_graphs: int = 0
    activations: int = 0
    embeddings: int = 0

    @property
    def peak(self) -> int:
        return self.start + self.rise

    @property
    def components(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COMPONENTS}

    def metrics(self) -> dict[str, float]:
        figures = {f"memory/{name}": float(value) for name, value in self.components.items()}
        return {"memory/peak_bytes": float(self.peak), "memory/start_bytes": float(self.start), **figures}


def device_modules(job: TrainingJob) -> list[nn.Module]:
    """Every module the job holds: the policy, the reference, and the family's frozen parts (lists included)."""
    found: list[nn.Module] = [job.policy]
    if job.reference is not None:
        found.append(job.reference)
    for value in vars(job.family).values():
        candidates = value if isinstance(value, list | tuple) else [value]
        found.extend(v for v in candidates if isinstance(v, nn.Module))
    return found


def on_device(job: TrainingJob, modules: list[nn.Module]) -> list[torch.Tensor]:
    """The modules' weights and buffers on the job's device, each once."""
    seen: dict[int, torch.Tensor] = {}
    for module in modules:
        for tensor in [*module.parameters(), *module.buffers()]:
            if tensor.device.type == job.dist.device.type:
                seen.setdefault(id(tensor), tensor)
    return list(seen.values())


def weight_tensors(job: TrainingJob) -> list[torch.Tensor]:
    """Every weight and buffer on the job's device, each once."""
    return on_device(job, device_modules(job))


def reference_bytes(job: TrainingJob) -> int:
    """The KL reference's own weights on the device (a host copy swapped in per use holds none there)."""
    return 0 if job.reference is None else distinct_bytes(on_device(job, [job.reference]))


def optimizer_tensors(job: TrainingJob) -> list[torch.Tensor]:
    return [v for state in job.optimizer.state.values() for v in state.values() if isinstance(v, torch.Tensor)]


def gradient_tensors(job: TrainingJob) -> list[torch.Tensor | None]:
    holders = [*job.parameters, *job.gradient_slots()] if job.sharding.fsdp else job.parameters
    return [p.grad for p in holders]


def held_bytes(job: TrainingJob) -> int:
    """The job's own tensors on its device: weights, optimizer state, gradients and cached embeddings."""
    tensors = [*weight_tensors(job), *optimizer_tensors(job), *gradient_tensors(job)]
    return distinct_bytes(tensors) + job.embedding_bytes()


def start_bytes(job: TrainingJob) -> int:
    if job.dist.device.type == "cuda":
        return torch.cuda.memory_allocated(job.dist.device)
    return held_bytes(job)


def rise_bytes(device: torch.device, action: Callable[[], object]) -> int:
    """The largest rise of live bytes above the start while ``action`` runs: CUDA's allocator peak after a reset,
    or on the CPU the profiler's allocation records."""
    if device.type != "cuda":
        return peak_step_bytes(action)
    torch.cuda.synchronize(device)
    torch.cuda.reset_peak_memory_stats(device)
    begin = torch.cuda.memory_allocated(device)
    action()
    torch.cuda.synchronize(device)
    return torch.cuda.max_memory_allocated(device) - begin


def measure_step(job: TrainingJob, step: Callable[[], Result]) -> tuple[Result, StepMemory]:
    """Run one step, measuring its peak and its components."""
    meter = job.memory
    weights = weight_tensors(job)
    start = start_bytes(job)
    optimizer_state = distinct_bytes(optimizer_tensors(job))  # AdamW's first step makes it after its peak
    meter.start(weights)
    done: list[Result] = []
    try:
        with meter.counting():
            rise = rise_bytes(job.dist.device, lambda: done.append(step()))
    finally:
        meter.stop()
    trajectory = getattr(done[0], "trajectory", None)
    held = 0 if trajectory is None else distinct_bytes([trajectory.latents, trajectory.log_probs, trajectory.images])
    reference = reference_bytes(job)
    memory = StepMemory(
        start=start,
        rise=rise,
        parameters=distinct_bytes(weights) - reference,
        reference=reference,
        gradients=max(meter.gradients, distinct_bytes(gradient_tensors(job))),
        optimizer_state=optimizer_state,
        retained_graphs=meter.retained,
        activations=max(0, meter.saved_peak - meter.retained) + held,
        embeddings=job.embedding_bytes(),
    )
    meter.last = memory
    return done[0], memory
