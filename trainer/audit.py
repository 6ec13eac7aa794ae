"""The gradient audit (docs/executors.md §4): one training step per executor on one fixed
trajectory, gradients compared with native's.

The native sampler rolls out the step's whole batch once; its latents, log-probs and rewards are
frozen as a :class:`~trainer.job.Replay`, and each rank replays its own samples' slice (digenrl's
generators replay the whole of it, group by group). Then, from the same weights and optimizer state,
each executor takes one step in replay mode (its forwards see exactly the stored x_i and x_{i+1}), and
the flattened gradient is captured after synchronisation and before clipping (the ``"clip"`` hook; an
executor whose gradient lives on some ranks only names the rank that has it). fp32 and deterministic
kernels, so E0 executors can be compared bit for bit.

Each executor is judged by its exactness class for the audited plan (``Executor.exactness``): E0 must be
bitwise equal to native (the summation order is native's), E1 within ``CLASS_BOUNDS["E1"]`` relative L2,
A is reported. With ``kl_beta > 0`` the audit first moves the policy off the reference by a seeded
perturbation of every trainable weight (``REFERENCE_OFFSET`` of the tensor's RMS): at the reference the
KL's gradient is exactly 0, and a wrong KL term would pass unseen. The trajectory is rolled out after
the perturbation, so the first ratio is still 1.
"""

from __future__ import annotations

import copy
import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist

from trainer.distributed import Distributed
from trainer.executors.gradient_cosine import gradient_cosine
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.job import GradientHook, Replay, Scores, TrainingJob
from trainer.layout import step_batch
from trainer.rollout import Trajectory
from trainer.run import load_spec
from trainer.sharding import local_value
from trainer.spec import FSDP_EXECUTORS, ExecutorOptions, JaggOptions, JobSpec, SpecError
from trainer.spec.executor_choice import options_for

# The relative L2 bound of each exactness class (docs/executors.md §1): E0 bitwise, E1 up to floating-point
# reassociation; class A (approximate) is reported only.
CLASS_BOUNDS = {"E0": 0.0, "E1": 1e-5}
REFERENCE_OFFSET = 0.05  # the perturbation's standard deviation, relative to each tensor's RMS
METRICS = ("loss", "clip_frac", "kl")  # reported per executor with native's definitions
COLLECTIVES = ("executor/param_all_gathers", "executor/grad_reductions")  # per step, this rank
WORST_TENSORS = 5


@dataclass
class Capture:
    gradient: torch.Tensor  # flattened, after sync, before clipping
    per_tensor: list[torch.Tensor]
    update: torch.Tensor  # θ after one AdamW step − θ before
    extra: dict[str, Any]
    metrics: dict[str, float]  # the step's loss, clip fraction and KL as the executor reports them
    exactness: str  # the executor's class for this plan


def deterministic() -> None:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def compare(candidate: Capture, reference: Capture, names: list[str]) -> dict[str, Any]:
    g, n = candidate.gradient.double(), reference.gradient.double()
    norm = float(n.norm())
    per_tensor = []
    for name, a, b in zip(names, candidate.per_tensor, reference.per_tensor, strict=True):
        scale = float(b.double().norm()) or 1.0
        per_tensor.append((float((a.double() - b.double()).norm()) / scale, name))
    per_tensor.sort(reverse=True)
    du, dn = candidate.update.double(), reference.update.double()
    return {
        "bitwise_equal": bool(torch.equal(candidate.gradient, reference.gradient)),
        "rel_l2": float((g - n).norm()) / norm if norm else float((g - n).norm()),
        "cosine": gradient_cosine(g, n),
        "max_abs_diff": float((g - n).abs().max()),
        "grad_norm": float(g.norm()),
        "native_grad_norm": norm,
        "worst_tensors": [{"name": name, "rel_l2": rel} for rel, name in per_tensor[:WORST_TENSORS]],
        "update_rel_l2": float((du - dn).norm() / dn.norm()) if float(dn.norm()) else 0.0,
        "update_cosine": gradient_cosine(du, dn),
    }


def verdict(options: ExecutorOptions, result: dict[str, Any]) -> str:
    """pass/fail against the class bound, warn/report for class A; a NaN or infinite figure fails whatever
    the class (a NaN compares false with every bound, and would otherwise read as a pass or a report)."""
    if not all_finite(result):
        return "fail"
    if result["class"] == "E0":
        return "pass" if result["bitwise_equal"] else "fail"
    if result["class"] == "E1":
        return "pass" if result["rel_l2"] <= CLASS_BOUNDS["E1"] else "fail"
    warn = options.cosine_warn if isinstance(options, JaggOptions) else None
    if warn is not None and result["cosine"] < warn:
        return "warn"
    return "report"


def all_finite(value: object) -> bool:
    """Every number in ``value`` (nested in dicts and lists) is finite."""
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(all_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


class AuditSession:
    """One rank's job, batch and frozen trajectory; each ``capture`` starts from the same weights
    and optimizer state."""

    def __init__(self, spec: JobSpec, names: list[str]) -> None:
        self.spec = spec
        self.options = {name: options_for(spec, name) for name in names}
        deterministic()
        self.layout = "shared" if any(EXECUTOR_CLASSES[n].layout == "shared" for n in names) else "sharded"
        # The spec's sharding when every audited executor runs under it (FSDP), else a replica per rank.
        replicate = any(name not in FSDP_EXECUTORS for name in names)
        self.job = job = TrainingJob.build(spec, self.layout, replicate=replicate)
        self.dist, pool, algo = job.dist, job.prompts, spec.algorithm
        self.offset = move_off_reference(job, spec.seed) if algo.kl_beta > 0 else None
        rank, world = self.dist.rank, self.dist.world_size
        self.batch = step_batch(pool, 1, spec.seed, algo.prompts_per_step, algo.group_size, rank, world, self.layout)
        whole = step_batch(pool, 1, spec.seed, algo.prompts_per_step, algo.group_size, 0, 1)
        with torch.no_grad():
            trajectory = job.rollout(whole, job.algorithm.plan(whole, Distributed(0, 1, 0, self.dist.device)))
        self.whole = Replay(trajectory, job.score(trajectory, whole))  # rows in sample order
        job.replay = self.mine = replay_rows(self.whole, self.batch.sample_ids)
        self.weights = [p.detach().clone() for p in job.parameters]
        self.optimizer_state = copy.deepcopy(job.optimizer.state_dict())
        self.names = [n for n, p in job.policy.named_parameters() if p.requires_grad]

    def capture(self, name: str, hooks: tuple[GradientHook, ...] = ()) -> Capture:
        """One step of ``name`` from the initial weights; the first clip-hook gradient is kept."""
        job = self.job
        with torch.no_grad():
            for param, value in zip(job.parameters, self.weights, strict=True):
                param.copy_(value)
        job.optimizer.load_state_dict(copy.deepcopy(self.optimizer_state))
        job.optimizer.zero_grad(set_to_none=True)
        captured: list[list[torch.Tensor]] = []

        def keep(event: str, grads: list[torch.Tensor]) -> None:
            if event == "clip" and not captured:
                captured.append([local_value(g.detach()).clone() for g in grads])  # under FSDP: gathered

        installed = [keep, *hooks]
        job.gradient_hooks.extend(installed)
        executor = make_executor(self.options[name], job)
        job.replay = self.whole if executor.replays_whole_batch else self.mine
        try:
            result = executor.train_step(self.batch)
        finally:
            job.gradient_hooks[:] = [h for h in job.gradient_hooks if h not in installed]
            job.replay = self.mine
        extra = executor.audit_extra() if hasattr(executor, "audit_extra") else {}
        moved = zip(job.parameters, self.weights, strict=True)
        update = torch.cat([(local_value(p.detach()) - local_value(w)).reshape(-1) for p, w in moved])
        grads = captured[0] if captured else [torch.zeros_like(local_value(p.detach())) for p in job.parameters]
        flat = torch.cat([g.reshape(-1) for g in grads])
        source = executor.training_rank()
        if source is not None:  # a rank that does not train gets the one that does
            dist.broadcast(flat, src=source)
            grads = [part.view_as(p) for part, p in zip(flat.split([p.numel() for p in grads]), grads, strict=True)]
        averaged = job.dist.all_reduce_mean(torch.tensor([result.metrics[key] for key in METRICS], dtype=torch.float64))
        metrics = dict(zip(METRICS, averaged.tolist(), strict=True))  # over ranks, as the run loop reports them
        metrics |= {key: result.metrics[key] for key in COLLECTIVES if key in result.metrics}
        return Capture(flat, grads, update, extra, metrics, executor.exactness(job.plan(self.batch)))


def move_off_reference(job: TrainingJob, seed: int) -> float:
    """Add seeded noise of REFERENCE_OFFSET × RMS to every trainable tensor (the reference, a frozen copy or
    the disabled adapter, stays), so the KL and its gradient are not 0; returns the relative size of the
    move. A tensor that is all zeros (LoRA's B) takes the RMS of all trainable weights."""
    generator = torch.Generator().manual_seed(seed)
    locals_ = [local_value_of(p) for p in job.parameters]
    overall = float(torch.cat([t.detach().reshape(-1) for t in locals_]).pow(2).mean().sqrt())
    moved = 0.0
    with torch.no_grad():
        for tensor in locals_:
            rms = float(tensor.pow(2).mean().sqrt()) or overall
            noise = torch.randn(tensor.shape, generator=generator).to(tensor.device) * REFERENCE_OFFSET * rms
            tensor.add_(noise)
            moved += float(noise.pow(2).sum())
    return (moved**0.5) / (overall * sum(t.numel() for t in locals_) ** 0.5)


def local_value_of(param: torch.Tensor) -> torch.Tensor:
    """The tensor this rank holds: an FSDP shard's local part, or the parameter itself."""
    from torch.distributed.tensor import DTensor

    return param.to_local() if isinstance(param, DTensor) else param


def replay_rows(replay: Replay, rows: torch.Tensor) -> Replay:
    """The replay of `rows` of the whole batch (in sample order): one rank's samples."""
    t, scores = replay.trajectory, replay.scores
    held = rows.to(t.latents.device)  # the trajectory's rows are indexed where it lives, the scores' on the host
    uncond = None if t.uncond is None else t.uncond.index(held)
    trajectory = Trajectory(t.latents[held], t.log_probs[held], t.cond.index(held), uncond, t.images[held])
    return Replay(trajectory, Scores(scores.total[rows], {k: v[rows] for k, v in scores.parts.items()}))


def audit(spec_path: Path, names: list[str]) -> dict[str, Any]:
    """Run the audit on this rank; every rank returns the same report."""
    spec = load_spec(spec_path)
    if spec.model.precision != "fp32":
        raise SpecError("model.precision", "the audit compares fp32 gradients: set it to 'fp32'")
    unknown = [n for n in names if n not in EXECUTOR_CLASSES]
    if unknown:
        raise SpecError("executor.name", f"cannot audit {', '.join(unknown)}; auditable: {', '.join(EXECUTOR_CLASSES)}")
    names = ["native", *[n for n in names if n != "native"]]
    session = AuditSession(spec, names)
    captures = {name: session.capture(name) for name in names}
    report: dict[str, Any] = {
        "spec": str(spec_path),
        "world_size": session.dist.world_size,
        "layout": session.layout,
        "sharding": session.job.sharding.strategy,
        "samples": session.batch.global_size,
        "trainable_parameters": sum(p.numel() for p in session.job.parameters),
        "reference_offset": session.offset,  # relative L2 of the move off the reference (None: not moved)
        "native_metrics": captures["native"].metrics,
        "executors": {},
    }
    for name in names[1:]:
        result = compare(captures[name], captures["native"], session.names)
        result.update(captures[name].extra)
        result["class"] = captures[name].exactness
        result["bound"] = CLASS_BOUNDS.get(captures[name].exactness)
        result["metrics"] = captures[name].metrics
        result["verdict"] = verdict(session.options[name], result)
        report["executors"][name] = result
    session.dist.barrier()
    session.dist.close()
    return report
