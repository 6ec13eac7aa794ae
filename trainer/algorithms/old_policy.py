"""The forward family's old policy: a copy of the trainable weights that follows them after each step.

DiffusionNFT (NVlabs) keeps it as a second LoRA adapter, DGPO as its 'ema_ref' parameters; both update
old ← d · old + (1 − d) · θ after every step, with d = min(rate · step, cap). AWM's is the weights at the
step's start (d = 0). The policy's forward reads the copy by swapping it into the parameters' storage.
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
