"""One executor step on an audit session's replayed trajectory, with everything the step reports: the gradient the
clip sees, every metric (the audit's capture keeps three) and the step's wall seconds."""

from __future__ import annotations

import time
from dataclasses import dataclass

import torch

from trainer.audit import AuditSession
from trainer.executors.base import Executor


@dataclass
class SessionStep:
    gradient: torch.Tensor  # flattened, float64, as the clip hook sees it
    metrics: dict[str, float]
    seconds: float


def session_step(session: AuditSession, executor: Executor) -> SessionStep:
    """``executor`` (built on ``session.job``) takes one step from the session's weights and optimizer state."""
    job = session.job
    session.restore()
    seen: list[torch.Tensor] = []

    def keep(event: str, grads: list[torch.Tensor]) -> None:
        if event == "clip" and not seen:
            seen.append(torch.cat([g.detach().reshape(-1) for g in grads]).double())

    job.gradient_hooks.append(keep)
    try:
        began = time.perf_counter()
        metrics = executor.train_step(session.batch).metrics
        return SessionStep(seen[0], metrics, time.perf_counter() - began)
    finally:
        job.gradient_hooks.remove(keep)
