"""Where lean_reweight's provisional per-sample gradients wait for their advantage (docs/executors.md §2).

Autograd sums every backward into one ``.grad``; once two samples with pending advantages share
it, no function of the sum recovers Σ A_n P_n (LeanGRPO App. C). Each regime is one exact way
out, each leaving the corrected H = Σ_q f_q P_q in ``.grad`` at ``close``:

- R1 ``per_rank``: one sample per rank per group, so ``.grad`` *is* P_q; scaled in place.
- R2 ``per_sample``: ``.grad`` moves into buffer q by pointer swap; H = Σ f_q buf_q.
- R4 ``affine``: A is affine in the sample's own reward, A = w (r − r̄)/ŝ, so two running sums
  S0 = Σ w P and S1 = Σ w (r − c) P, fed as each sample is scored (c: the group's first reward, near
  its mean, so the subtraction below cancels little), give
  H = (S1 − (r̄ − c) S0)/ŝ with memory independent of Q. Exact only while the clip is inactive.

Rewards, factors, the mean and the scale may be 0-d tensors on the gradients' device (lean_reweight passes them
so, never reading a reward on the host) or Python numbers.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

import torch

Number = float | torch.Tensor  # a Python number, or a 0-d (or one-element) tensor on the gradients' device


def take_grads(params: list[torch.Tensor]) -> list[torch.Tensor]:
    """Move every ``.grad`` out (no copy) and leave ``None`` for the next backward."""
    grads = []
    for param in params:
        grads.append(param.grad if param.grad is not None else torch.zeros_like(param))
        param.grad = None
    return grads


def tensor_bytes(tensors: list[torch.Tensor]) -> int:
    return sum(t.numel() * t.element_size() for t in tensors)


class ProvisionalBuffers(ABC):
    regime: ClassVar[int]

    def __init__(self, params: list[torch.Tensor]) -> None:
        self.params = params
        self.peak_bytes = 0

    @abstractmethod
    def sample_done(self, weight: float, reward: Number) -> None:
        """Sample q's provisional gradient P_q (unit advantage) is in ``.grad``."""

    def note(self, held: int) -> None:
        self.peak_bytes = max(self.peak_bytes, held)


class PerRankBuffer(ProvisionalBuffers):
    regime = 1

    def __init__(self, params: list[torch.Tensor]) -> None:
        super().__init__(params)
        self.samples = 0

    def sample_done(self, weight: float, reward: Number) -> None:
        self.samples += 1
        if self.samples > 1:
            raise RuntimeError("per_rank buffers hold one sample per group; a second would mix into .grad")

    def close(self, factors: list[Number]) -> None:
        (factor,) = factors
        for param in self.params:
            if param.grad is None:
                param.grad = torch.zeros_like(param)
            param.grad.mul_(factor)
        self.samples = 0


class PerSampleBuffers(ProvisionalBuffers):
    regime = 2

    def __init__(self, params: list[torch.Tensor]) -> None:
        super().__init__(params)
        self.buffers: list[list[torch.Tensor]] = []

    def sample_done(self, weight: float, reward: Number) -> None:
        self.buffers.append(take_grads(self.params))
        self.note(sum(tensor_bytes(b) for b in self.buffers))

    def close(self, factors: list[Number]) -> None:
        first, *rest = self.buffers
        for index, param in enumerate(self.params):
            total = first[index].mul_(factors[0])
            for buffer, factor in zip(rest, factors[1:], strict=True):
                total.add_(buffer[index] * factor)
            param.grad = total
        self.buffers = []


class AffineBuffers(ProvisionalBuffers):
    regime = 4

    def __init__(self, params: list[torch.Tensor], offset: Number | None = None) -> None:
        super().__init__(params)
        self.offset = offset
        self.s0 = [torch.zeros_like(p, dtype=torch.float32) for p in params]
        self.s1 = [torch.zeros_like(p, dtype=torch.float32) for p in params]
        self.note(tensor_bytes(self.s0) * 2)

    def sample_done(self, weight: float, reward: Number) -> None:
        if isinstance(reward, torch.Tensor):
            reward = reward.double().reshape(())
        if self.offset is None:  # c: the group's first reward, near its mean, limits cancellation
            self.offset = reward
        factor = weight * (reward - self.offset)
        for param, s0, s1 in zip(self.params, self.s0, self.s1, strict=True):
            if param.grad is not None:
                s0.add_(param.grad, alpha=weight)
                s1.add_(param.grad * factor)
            param.grad = None

    def close(self, mean: Number, scale: Number) -> None:
        """.grad ← scale · (S1 − (r̄ − c) S0); the sums restart for the next group."""
        offset = 0.0 if self.offset is None else self.offset
        for param, s0, s1 in zip(self.params, self.s0, self.s1, strict=True):
            param.grad = (s1 - (mean - offset) * s0).mul_(scale).to(param.dtype)
            s0.zero_()
            s1.zero_()
        self.offset = None


class KlBuffer:
    """The extra VJP's destination: the β·KL gradient, never scaled by an advantage."""

    def __init__(self, params: list[torch.Tensor]) -> None:
        self.params = params
        self.grads: list[torch.Tensor | None] = [None] * len(params)

    def backward(self, loss: torch.Tensor) -> None:
        """Backward ``loss`` into this buffer, keeping the graph for the provisional backward."""
        stash = [p.grad for p in self.params]
        for param, grad in zip(self.params, self.grads, strict=True):
            param.grad = grad
        loss.backward(retain_graph=True)
        self.grads = [p.grad for p in self.params]
        for param, grad in zip(self.params, stash, strict=True):
            param.grad = grad

    def add_to_grads(self) -> None:
        for param, grad in zip(self.params, self.grads, strict=True):
            if grad is not None:
                param.grad = grad if param.grad is None else param.grad.add_(grad)
        self.grads = [None] * len(self.params)

    @property
    def bytes(self) -> int:
        return tensor_bytes([g for g in self.grads if g is not None])
