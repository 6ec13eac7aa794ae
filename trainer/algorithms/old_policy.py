"""The forward family's old policy: a copy of the trainable weights that follows them after each step.

DiffusionNFT (NVlabs) keeps it as a second LoRA adapter, DGPO as its 'ema_ref' parameters; both update
old ← d · old + (1 − d) · θ after every step, with d = min(rate · step, cap). AWM's is the weights at the
step's start (d = 0); AWM's EMA for its EMA-KL is a second such copy. The policy's forward reads a copy by
swapping it into the parameters' storage. Checkpoints keep each copy (``trainer/checkpoint.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


class OldPolicy:
    def __init__(self, parameters: list[torch.Tensor]) -> None:
        self.weights = [p.detach().clone() for p in parameters]

    @contextmanager
    def swapped_in(self, parameters: list[torch.Tensor]) -> Iterator[None]:
        """The parameters hold the old weights inside (forward only: nothing may step them)."""
        current = [p.data for p in parameters]
        for param, old in zip(parameters, self.weights, strict=True):
            param.data = old
        try:
            yield
        finally:
            for param, data in zip(parameters, current, strict=True):
                param.data = data

    @torch.no_grad()
    def follow(self, parameters: list[torch.Tensor], decay: float) -> None:
        for old, param in zip(self.weights, parameters, strict=True):
            old.mul_(decay).add_(param.detach(), alpha=1 - decay)

    def state(self) -> list[torch.Tensor]:
        """The copy's tensors on the CPU, for a checkpoint."""
        return [old.detach().cpu().contiguous() for old in self.weights]

    @torch.no_grad()
    def load(self, values: list[torch.Tensor]) -> None:
        for old, value in zip(self.weights, values, strict=True):
            old.copy_(value)

    @torch.no_grad()
    def restart(self, parameters: list[torch.Tensor]) -> None:
        """The copy set to the weights now (a checkpoint that holds no copy)."""
        self.load([p.detach() for p in parameters])
