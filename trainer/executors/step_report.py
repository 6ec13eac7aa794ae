"""The metrics every executor reports for a step, gathered the same way whatever the schedule,
so the dashboard compares executors key by key (executors/base.py lists the keys)."""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from trainer.job import StepTerms


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass
class StepReport:
    losses: list[float] = field(default_factory=list)
    kls: list[float] = field(default_factory=list)
    approx_kls: list[float] = field(default_factory=list)
    ratios: list[torch.Tensor] = field(default_factory=list)
    clipped: list[torch.Tensor] = field(default_factory=list)
    grad_norms: list[float] = field(default_factory=list)

    def add(self, terms: StepTerms) -> None:
        self.losses.append(float(terms.loss.detach()))
        self.kls.append(terms.kl)
        self.approx_kls.append(terms.approx_kl)
        self.ratios.append(terms.ratio.reshape(-1))
        self.clipped.append(terms.clipped.reshape(-1))

    def metrics(self, times: dict[str, float], executor: dict[str, float]) -> dict[str, float]:
        """Shared keys, ``time/*`` as given, and the executor's own keys under ``executor/``."""
        ratio = torch.cat(self.ratios) if self.ratios else torch.ones(1)
        clipped = torch.cat(self.clipped) if self.clipped else torch.zeros(1, dtype=torch.bool)
        out = {
            "loss": mean(self.losses),
            "kl": mean(self.kls),
            "approx_kl": mean(self.approx_kls),
            "clip_frac": float(clipped.float().mean()),
            "ratio/mean": float(ratio.mean()),
            "ratio/max_abs_dev": float((ratio - 1).abs().max()),
            "grad_norm": mean(self.grad_norms),
        }
        out.update({f"time/{k}": v for k, v in times.items()})
        out.update({f"executor/{k}": float(v) for k, v in executor.items()})
        return out
