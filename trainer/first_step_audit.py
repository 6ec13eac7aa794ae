"""``executor.audit_first_step``: the gradient audit (trainer/audit.py) on a run's own job, at its first step.

Before step 1 trains, native and the job's executor each take step 1 from the job's initial weights on one frozen
trajectory of step 1's batch, as ``python -m trainer audit`` takes them (the same session, captures, floor and
judge; a composed executor also against the executor whose estimator it is), so the executor's cosine and relative
L2 against native's gradient are the audit's own figures. Then the job is put back as it was (weights, optimizer
state, random state, kernel flags; the audit also moves the policy off the
reference when kl_beta > 0), so step 1 trains as it would have without the audit.

The metric store keeps finite values only: a NaN or infinite figure is left out and ``audit/failed`` is 1, so a
NaN reads as a failed audit, never as a cosine of 1.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import torch

from trainer.audit import AuditSession, Variant, audited_executor, native_floor, with_estimators
from trainer.job import TrainingJob

FIGURES = {"cosine": "audit/cosine", "rel_l2": "audit/rel_l2"}


def first_step_audit(job: TrainingJob) -> dict[str, float]:
    """The job's executor audited against native on step 1: ``audit/cosine``, ``audit/rel_l2`` (when finite) and
    ``audit/failed`` (1 for a failed verdict or a non-finite figure, else 0)."""
    spec, name = job.spec, job.spec.executor.name
    weights = [p.detach().clone() for p in job.parameters]
    optimizer_state = copy.deepcopy(job.optimizer.state_dict())
    flags = kernel_flags()
    devices = [job.dist.device] if job.dist.device.type == "cuda" else []
    try:
        with torch.random.fork_rng(devices=devices):
            session = AuditSession(spec, with_estimators(list(dict.fromkeys(["native", name]))), job=job)
            native = {term: session.capture("native", variant=Variant(term)) for term in session.terms}
            floor = native_floor(session, native)
            result = audited_executor(session, name, native, floor, spec.model.precision == "bf16", {})
    finally:
        with torch.no_grad():
            for param, value in zip(job.parameters, weights, strict=True):
                param.copy_(value)
        job.optimizer.load_state_dict(optimizer_state)
        job.optimizer.zero_grad(set_to_none=True)
        job.replay = None
        set_kernel_flags(flags)
    return audit_metrics(result)


def audit_metrics(result: dict[str, Any]) -> dict[str, float]:
    """An executor's audit result as the run logs it: the finite figures, and ``audit/failed``."""
    figures = {metric: float(result[key]) for key, metric in FIGURES.items()}
    finite = {metric: value for metric, value in figures.items() if math.isfinite(value)}
    failed = result["verdict"] == "fail" or len(finite) < len(figures)
    return finite | {"audit/failed": float(failed)}


def kernel_flags() -> tuple[bool, bool, bool, bool]:
    """The kernel choices the audit's ``deterministic()`` changes."""
    backends = torch.backends
    return (
        torch.are_deterministic_algorithms_enabled(),
        backends.cudnn.benchmark,
        backends.cuda.matmul.allow_tf32,
        backends.cudnn.allow_tf32,
    )


def set_kernel_flags(flags: tuple[bool, bool, bool, bool]) -> None:
    deterministic, benchmark, matmul_tf32, cudnn_tf32 = flags
    torch.use_deterministic_algorithms(deterministic)
    torch.backends.cudnn.benchmark = benchmark
    torch.backends.cuda.matmul.allow_tf32 = matmul_tf32
    torch.backends.cudnn.allow_tf32 = cudnn_tf32
