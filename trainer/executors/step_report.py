"""The metrics every executor reports for a step, gathered the same way whatever the schedule,
so the dashboard compares executors key by key (executors/base.py lists the keys).

One report per optimizer update: each update's loss, KL, approx. KL, ratio and clip fraction are
means over the (sample, trained step) pairs its trained steps covered (native's definitions), and the
step's figure is the mean over its updates. An executor that forms an update's gradient without
per-step terms (Reweight's first update, at ρ = 1) reports that update once, as one entry.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch

from trainer.fsdp_gradients import CollectiveCounts
from trainer.job import StepTerms


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0


@dataclass
class UpdateReport:
    """Sums over one optimizer update's (sample, trained step) pairs."""

    pairs: int = 0
    loss: torch.Tensor | float = 0.0  # sums on the step's device, read once by ``means``
    kl: torch.Tensor | float = 0.0
    approx_kl: torch.Tensor | float = 0.0
    ratios: list[torch.Tensor] = field(default_factory=list)
    clipped: list[torch.Tensor] = field(default_factory=list)

    def means(self) -> dict[str, float]:
        ratio = torch.cat(self.ratios) if self.ratios else torch.ones(1)
        clipped = torch.cat(self.clipped) if self.clipped else torch.zeros(1, dtype=torch.bool)
        pairs = max(1, self.pairs)
        return {
            "loss": float(self.loss) / pairs,
            "kl": float(self.kl) / pairs,
            "approx_kl": float(self.approx_kl) / pairs,
            "clip_frac": float(clipped.float().mean()),
            "ratio/mean": float(ratio.mean()),
        }


@dataclass
class StepReport:
    # The job's collective counters: the step's parameter all-gathers and gradient reductions are reported
    # as executor/param_all_gathers and executor/grad_reductions (create the report as the step starts).
    collectives: CollectiveCounts | None = None
    updates: list[UpdateReport] = field(default_factory=lambda: [UpdateReport()])
    grad_norms: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.start = self.collectives.copy() if self.collectives is not None else None

    def add(self, terms: StepTerms) -> None:
        """One trained step's terms (means over its rows) into the update being formed."""
        rows = terms.ratio.numel()
        update = self.updates[-1]
        update.pairs += rows
        update.loss = update.loss + terms.loss.detach() * rows
        update.kl = update.kl + terms.kl * rows
        update.approx_kl = update.approx_kl + terms.approx_kl * rows
        update.ratios.append(terms.ratio.reshape(-1))
        update.clipped.append(terms.clipped.reshape(-1))

    def close_update(self, grad_norm: float) -> None:
        """The optimizer stepped: later terms belong to the next update."""
        self.grad_norms.append(grad_norm)
        self.updates.append(UpdateReport())

    def metrics(self, times: dict[str, float], executor: dict[str, float]) -> dict[str, float]:
        """Shared keys, ``time/*`` as given, and the executor's own keys under ``executor/``."""
        updates = [u for u in self.updates if u.pairs] or [UpdateReport()]
        per_update = [u.means() for u in updates]
        ratios = [r for u in updates for r in u.ratios] or [torch.ones(1)]
        out = {key: mean([m[key] for m in per_update]) for key in per_update[0]}
        out["ratio/max_abs_dev"] = float((torch.cat(ratios) - 1).abs().max())
        out["grad_norm"] = mean(self.grad_norms)
        out.update({f"time/{k}": v for k, v in times.items()})
        if self.collectives is not None and self.start is not None:
            executor = {**executor, **self.collectives.since(self.start)}
        out.update({f"executor/{k}": float(v) for k, v in executor.items()})
        return out
