"""The gradient audit (docs/executors.md §4): one training step per executor on one fixed
trajectory, every optimizer update's gradient compared with native's, the policy-gradient and KL terms apart.

The native sampler rolls out the step's whole batch once; its latents, log-probs and rewards are
frozen as a :class:`~trainer.job.Replay`, and each rank replays its own samples' slice (digenrl's
generators replay the whole of it, group by group). Then, from the same weights and optimizer state,
each executor takes one step in replay mode (its forwards see exactly the stored x_i and x_{i+1}), and
the flattened gradient of every optimizer update (all inner epochs, the hybrid schedule's later updates) is
captured after synchronisation and before clipping (the ``"clip"`` hook; an executor whose gradient lives on
some ranks only names the rank that has it). Deterministic kernels, so E0 executors can be compared bit for bit.

Each update is judged three times when ``kl_beta > 0``: the whole loss, the policy-gradient term alone (the
step at ``kl_beta`` 0) and the KL term alone (the step with every reward 0, so every advantage is 0 and the
policy term's gradient is exactly 0). The KL's share of the whole gradient is small (a few tenths of a percent
of its norm on the tiny model at β = 0.04), so a wrong KL hides inside the whole loss's bound; alone it cannot.
An executor's verdict is the worst of its updates' and terms' verdicts.

Each executor is judged by its exactness class for the audited plan (``Executor.exactness``): E0 must be
bitwise equal to native (the summation order is native's), E1 within its bound, A is reported. Native is run
again with its re-forward split into other micro-batches (one row each, with the old log-probs such a run would
have recorded, so its first ratio is 1 too): its relative L2 from itself is the floor of each update and term, and
the E1 bound is ``FLOOR_SAFETY`` times the floor, never under ``CLASS_BOUNDS["E1"]``. In fp32 the floor is about
1e-7 and the bound 1e-5, except where a term is a difference of nearly equal values (the KL on a LoRA adapter moved
off zero). In bf16 (``model.precision: bf16``) the E0 executors join the E1 ones in the bf16 class, with the same
rule on bf16's floor.

With ``kl_beta > 0`` the audit first moves the policy off the reference by a seeded perturbation of every
trainable weight (``REFERENCE_OFFSET`` of the tensor's RMS): at the reference the KL's gradient is exactly 0,
and a wrong KL term would pass unseen. The trajectory is rolled out after the perturbation, so the first
ratio is still 1.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import torch
import torch.distributed as dist

from trainer.algorithms.base import StepPlan
from trainer.distributed import Distributed
from trainer.executors.gradient_cosine import gradient_cosine
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.job import GradientHook, Replay, Scores, TrainingJob
from trainer.layout import step_batch
from trainer.rollout import Trajectory
from trainer.run import load_spec
from trainer.sampling.sde_step import sde_step
from trainer.sharding import local_value
from trainer.spec import FSDP_EXECUTORS, ExecutorOptions, JaggOptions, JobSpec, SpecError
from trainer.spec.executor_choice import options_for

# The relative L2 bound of each exactness class (docs/executors.md §1): E0 bitwise, E1 up to floating-point
# reassociation; class A (approximate) is reported only.
CLASS_BOUNDS = {"E0": 0.0, "E1": 1e-5}
# The E1 and bf16 bound: this many times native's own difference under another micro-batch split (executors.md §4).
FLOOR_SAFETY = 3.0
PRECISIONS = ("fp32", "bf16")  # the precisions the audit has a class for
REFERENCE_OFFSET = 0.05  # the perturbation's standard deviation, relative to each tensor's RMS
METRICS = ("loss", "clip_frac", "kl")  # reported per executor with native's definitions
COLLECTIVES = ("executor/param_all_gathers", "executor/grad_reductions")  # per step, this rank
WORST_TENSORS = 5
SEVERITY = ("pass", "report", "warn", "fail")  # an executor's verdict is its worst update's and term's
Term = Literal["total", "policy", "kl"]  # the whole loss, the policy-gradient term, the KL term


@dataclass(frozen=True)
class Variant:
    """How one captured step differs from the audited spec's."""

    # "policy": the step at kl_beta 0; "kl": every reward 0, so only the KL's gradient is left
    term: Term = "total"
    micro_batches: int | None = None  # native re-forwarding in this many row chunks, with its own old log-probs
    updates: int | None = None  # inner_epochs (1: the first update alone, for its ratio)


@dataclass
class Capture:
    gradient: torch.Tensor  # the first update's, flattened, after sync, before clipping
    per_tensor: list[torch.Tensor]
    update: torch.Tensor  # θ after the step's optimizer updates − θ before
    extra: dict[str, Any]
    metrics: dict[str, float]  # the step's loss, clip fraction and KL as the executor reports them
    exactness: str  # the executor's class for this plan
    gradients: list[list[torch.Tensor]] = field(default_factory=list)  # every update's, per tensor, in order
    ratio_distance: float = 0.0  # max |ρ − 1| over the step's (sample, trained step) pairs and ranks


def deterministic() -> None:
    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def gradient_figures(
    candidate: torch.Tensor,
    reference: torch.Tensor,
    candidate_tensors: list[torch.Tensor],
    reference_tensors: list[torch.Tensor],
    names: list[str],
) -> dict[str, Any]:
    """One gradient against native's: bitwise equality, relative L2, cosine, the largest difference and the
    tensors that differ most (relative to native's tensor)."""
    g, n = candidate.double(), reference.double()
    norm = float(n.norm())
    per_tensor = []
    for name, a, b in zip(names, candidate_tensors, reference_tensors, strict=True):
        scale = float(b.double().norm()) or 1.0
        per_tensor.append((float((a.double() - b.double()).norm()) / scale, name))
    per_tensor.sort(reverse=True)
    return {
        "bitwise_equal": bool(torch.equal(candidate, reference)),
        "rel_l2": float((g - n).norm()) / norm if norm else float((g - n).norm()),
        "cosine": gradient_cosine(g, n),
        "max_abs_diff": float((g - n).abs().max()),
        "grad_norm": float(g.norm()),
        "native_grad_norm": norm,
        "worst_tensors": [{"name": name, "rel_l2": rel} for rel, name in per_tensor[:WORST_TENSORS]],
    }


def compare(candidate: Capture, reference: Capture, names: list[str]) -> dict[str, Any]:
    """The first update's gradient figures and the whole step's weight update against native's."""
    du, dn = candidate.update.double(), reference.update.double()
    first = gradient_figures(candidate.gradient, reference.gradient, candidate.per_tensor, reference.per_tensor, names)
    return first | {
        "update_rel_l2": float((du - dn).norm() / dn.norm()) if float(dn.norm()) else 0.0,
        "update_cosine": gradient_cosine(du, dn),
    }


def verdict(options: ExecutorOptions, result: dict[str, Any]) -> str:
    """pass/fail against the class bound (``result["bound"]`` where given, else the class's fp32 bound),
    warn/report for class A; a NaN or infinite figure fails whatever the class (a NaN compares false with every
    bound, and would otherwise read as a pass or a report)."""
    if not all_finite(result):
        return "fail"
    if result["class"] == "E0":
        return "pass" if result["bitwise_equal"] else "fail"
    if result["class"] in ("E1", "bf16"):
        bound = result["bound"] if result.get("bound") is not None else CLASS_BOUNDS[result["class"]]
        return "pass" if result["rel_l2"] <= bound else "fail"
    warn = options.cosine_warn if isinstance(options, JaggOptions) else None
    if warn is not None and result["cosine"] < warn:
        return "warn"
    return "report"


def worst(verdicts: list[str]) -> str:
    """The most severe verdict: fail, then warn, then report, then pass."""
    return max(verdicts, key=SEVERITY.index)


def all_finite(value: object) -> bool:
    """Every number in ``value`` (nested in dicts and lists) is finite."""
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, list | tuple):
        return all(all_finite(v) for v in value)
    return not isinstance(value, float) or math.isfinite(value)


def floor_bound(floor: float) -> float:
    """The E1 and bf16 bound of one update and term: FLOOR_SAFETY × native's own difference under another
    micro-batch split, never under CLASS_BOUNDS["E1"] (no executor is held closer than fp32 reassociation)."""
    return max(FLOOR_SAFETY * floor, CLASS_BOUNDS["E1"])


class AuditSession:
    """One rank's job, batch and frozen trajectory; each ``capture`` starts from the same weights
    and optimizer state."""

    def __init__(self, spec: JobSpec, names: list[str], job: TrainingJob | None = None) -> None:
        """A job of its own, or ``job`` (a run's, for its first-step audit: its layout and sharding as built)."""
        self.spec = spec
        self.options = {name: options_for(spec, name) for name in names}
        deterministic()
        self.layout = "shared" if any(EXECUTOR_CLASSES[n].layout == "shared" for n in names) else "sharded"
        if job is None:
            # The spec's sharding when every audited executor runs under it (FSDP), else a replica per rank.
            replicate = any(name not in FSDP_EXECUTORS for name in names)
            job = TrainingJob.build(spec, self.layout, replicate=replicate)
        else:
            self.layout = job.layout
        self.job = job
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

    @property
    def terms(self) -> list[Term]:
        """The terms each update is judged on: the whole loss, and with a KL its two terms apart."""
        return ["total", "policy", "kl"] if self.spec.algorithm.kl_beta > 0 else ["total"]

    def restore(self) -> None:
        """The job back at the session's initial weights and optimizer state, no gradient held: where every
        captured step starts."""
        job = self.job
        with torch.no_grad():
            for param, value in zip(job.parameters, self.weights, strict=True):
                param.copy_(value)
        job.optimizer.load_state_dict(copy.deepcopy(self.optimizer_state))
        job.optimizer.zero_grad(set_to_none=True)

    def capture(self, name: str, hooks: tuple[GradientHook, ...] = (), variant: Variant = Variant()) -> Capture:
        """One step of ``name`` from the initial weights; every update's clip-hook gradient is kept."""
        job = self.job
        self.restore()
        captured: list[list[torch.Tensor]] = []

        def keep(event: str, grads: list[torch.Tensor]) -> None:
            if event == "clip":
                captured.append([local_value(g.detach()).clone() for g in grads])  # under FSDP: gathered

        installed = [keep, *hooks]
        job.gradient_hooks.extend(installed)
        with job.variant(variant_spec(self.spec, variant)):
            whole, mine = self.whole, self.mine
            if variant.term == "kl":
                whole, mine = unrewarded(whole), unrewarded(mine)
            if variant.micro_batches is not None:
                mine = own_old_log_probs(job, mine, job.plan(self.batch))
            executor = make_executor(self.options[name], job)
            job.replay = whole if executor.replays_whole_batch else mine
            try:
                result = executor.train_step(self.batch)
            finally:
                job.gradient_hooks[:] = [h for h in job.gradient_hooks if h not in installed]
                job.replay = self.mine
        extra = executor.audit_extra() if hasattr(executor, "audit_extra") else {}
        moved = zip(job.parameters, self.weights, strict=True)
        update = torch.cat([(local_value(p.detach()) - local_value(w)).reshape(-1) for p, w in moved])
        source = executor.training_rank()
        if source is not None:  # a rank that does not train gets the one that does (one update a step: digenrl)
            zeros = [torch.zeros_like(local_value(p.detach())) for p in job.parameters]
            captured = [received(captured[0] if captured else zeros, source)]
        averaged = job.dist.all_reduce_mean(torch.tensor([result.metrics[key] for key in METRICS], dtype=torch.float64))
        metrics = dict(zip(METRICS, averaged.tolist(), strict=True))  # over ranks, as the run loop reports them
        metrics |= {key: result.metrics[key] for key in COLLECTIVES if key in result.metrics}
        ratio = job.dist.all_reduce_max(torch.tensor(result.metrics.get("ratio/max_abs_dev", 0.0), dtype=torch.float64))
        first = captured[0] if captured else [torch.zeros_like(local_value(p.detach())) for p in job.parameters]
        flat = torch.cat([g.reshape(-1) for g in first])
        exactness = executor.exactness(job.plan(self.batch))
        return Capture(flat, first, update, extra, metrics, exactness, captured, float(ratio))


def variant_spec(spec: JobSpec, variant: Variant) -> JobSpec:
    """The audited spec as one variant's step runs it."""
    changes: dict[str, Any] = {}
    if variant.term == "policy":
        changes["kl_beta"] = 0.0
    if variant.micro_batches is not None:
        changes["rollout_chunks"] = variant.micro_batches
    if variant.updates is not None:
        changes["inner_epochs"] = variant.updates
    if not changes:
        return spec
    return spec.model_copy(update={"algorithm": spec.algorithm.model_copy(update=changes)})


def received(grads: list[torch.Tensor], source: int) -> list[torch.Tensor]:
    """``grads`` as rank ``source`` holds them, on every rank."""
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.broadcast(flat, src=source)
    return [part.view_as(g) for part, g in zip(flat.split([g.numel() for g in grads]), grads, strict=True)]


def unrewarded(replay: Replay) -> Replay:
    """The replay with every reward 0: every advantage is then exactly 0 (0 − 0, over the std plus its ε), and so is
    the policy term's gradient, whatever the executor's schedule; the KL's is left."""
    scores = replay.scores
    zeros = Scores(torch.zeros_like(scores.total), {k: torch.zeros_like(v) for k, v in scores.parts.items()})
    return Replay(replay.trajectory, zeros)


def own_old_log_probs(job: TrainingJob, replay: Replay, plan: StepPlan) -> Replay:
    """The replay with the old log-probs of its trained steps as a native run at the job's micro-batch split would
    have recorded them (the same forwards, without grad, at the current weights): its first ratio is 1, as
    native's own is, so the split's difference is the kernels', not a clip that one side alone crosses."""
    t, grid = replay.trajectory, job.denoiser.grid
    log_probs = t.log_probs.clone()
    rows = torch.arange(log_probs.shape[0], device=grid.device)
    with torch.no_grad():
        for position in range(plan.trained.shape[1]):
            index = plan.trained[:, position].to(grid.device)
            x, x_next = t.latents[rows, index], t.latents[rows, index + 1]
            velocity = job.velocity(job.policy, x, index, t.cond, t.uncond)
            log_probs[rows, index] = sde_step(velocity, x, index, grid, x_next).log_prob
    return Replay(dataclasses.replace(t, log_probs=log_probs), replay.scores)


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
    held = rows.to(t.latents.device)  # rows are indexed where each tensor lives (scores stay on the device too)
    uncond = None if t.uncond is None else t.uncond.index(held)
    trajectory = Trajectory(t.latents[held], t.log_probs[held], t.cond.index(held), uncond, t.images[held])
    scored = Scores(
        scores.total[rows.to(scores.total.device)], {k: v[rows.to(v.device)] for k, v in scores.parts.items()}
    )
    return Replay(trajectory, scored)


def flat_of(grads: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in grads])


def first_update_ratio_distance(session: AuditSession, name: str, step: Capture, variant: Variant = Variant()) -> float:
    """max |ρ − 1| of the first update: the step's own figure when it has one update, else that of a one-update
    step from the same weights (an executor's first update does not depend on the ones after it)."""
    if session.spec.algorithm.inner_epochs == 1:
        return step.ratio_distance
    return session.capture(name, variant=dataclasses.replace(variant, updates=1)).ratio_distance


def native_floor(session: AuditSession, native: dict[str, Capture]) -> dict[str, Any]:
    """The E1 and bf16 bounds: native against itself with its re-forward split one row per micro-batch (the whole
    batch at once when the spec already splits it so), each update's and term's relative L2, times FLOOR_SAFETY."""
    rows = len(session.batch.prompts)
    split = floor_split(rows, session.spec.algorithm.rollout_chunks)
    floor: dict[str, list[float]] = {}
    ratio = 0.0
    for term in session.terms:
        variant = Variant(term, micro_batches=split)
        other = session.capture("native", variant=variant)
        if term == "total":
            ratio = first_update_ratio_distance(session, "native", other, variant)
        floor[term] = [
            gradient_figures(flat_of(a), flat_of(b), a, b, session.names)["rel_l2"]
            for a, b in zip(other.gradients, native[term].gradients, strict=True)
        ]
    return {
        "safety_factor": FLOOR_SAFETY,
        "micro_batches": split,
        "rows": rows,
        "native_split_first_update_ratio_distance": ratio,  # 0: the split's difference is its kernels'
        "floor": floor,
        "bound": {term: [floor_bound(f) for f in values] for term, values in floor.items()},
    }


def floor_split(rows: int, chunks: int) -> int:
    """The micro-batches native's floor re-forwards a rank's rows in: one row each, or the whole batch at once
    when the spec's own split (``rollout_chunks``) is already one row each."""
    return rows if chunks < rows else 1


def judge(
    session: AuditSession,
    name: str,
    captures: dict[str, Capture],
    native: dict[str, Capture],
    floor: dict[str, Any],
    bf16: bool,
) -> dict[str, Any]:
    """One executor's JSON: the first update's whole-loss figures at the top (as before), every update's terms under
    ``updates``, and the verdict: the worst of theirs, and fail when it took another number of updates than native."""
    step, options = captures["total"], session.options[name]
    judged = "bf16" if bf16 and step.exactness in CLASS_BOUNDS else step.exactness
    bounds = floor["bound"] if judged in ("E1", "bf16") else None  # per term, per update
    counts = [len(c.gradients) for c in [*captures.values(), *native.values()]]
    updates = []
    for update in range(min(counts)):
        terms = {}
        for term in session.terms:
            got, want = captures[term].gradients[update], native[term].gradients[update]
            figures = gradient_figures(flat_of(got), flat_of(want), got, want, session.names)
            figures["bound"] = bounds[term][update] if bounds is not None else CLASS_BOUNDS.get(judged)
            figures["verdict"] = verdict(options, {**figures, "class": judged})
            terms[term] = figures
        updates.append({"update": update + 1, "terms": terms})
    result = compare(step, native["total"], session.names) | step.extra
    result |= {
        "class": judged,
        "exactness": step.exactness,
        "bound": updates[0]["terms"]["total"]["bound"] if updates else CLASS_BOUNDS.get(judged),
        "metrics": step.metrics,
        "first_update_ratio_distance": first_update_ratio_distance(session, name, step),
        "updates_taken": len(step.gradients),  # the optimizer updates of its step: native's count, or a fail
        "updates": updates,
        "worst": worst_entry(updates),
    }
    verdicts = [figures["verdict"] for entry in updates for figures in entry["terms"].values()]
    whole = len(set(counts)) == 1 and all_finite(result)
    result["verdict"] = worst([*verdicts, "pass" if whole else "fail"])
    return result


def same_estimator(
    session: AuditSession, captures: dict[str, Capture], base: dict[str, Capture], floor: dict[str, Any]
) -> dict[str, Any]:
    """A composed executor's first update against the executor whose estimator it is (jagg_retain against jagg),
    each term apart (the whole loss, the policy term, the KL term: a KL's small share of the whole hides its error):
    the same gradient up to summation order, so within the first update's E1 bound of that term (FLOOR_SAFETY ×
    native's floor, at least CLASS_BOUNDS["E1"]), or a fail. The whole loss's figures stay at the top."""
    terms = {}
    for term in session.terms:
        got, want = captures[term], base[term]
        figures = gradient_figures(got.gradient, want.gradient, got.per_tensor, want.per_tensor, session.names)
        figures["bound"] = bound = floor["bound"][term][0]
        figures["verdict"] = "pass" if all_finite(figures) and figures["rel_l2"] <= bound else "fail"
        terms[term] = figures
    return terms["total"] | {"terms": terms, "verdict": worst([t["verdict"] for t in terms.values()])}


def with_estimators(names: list[str]) -> list[str]:
    """``names`` and, after them, the executors whose estimator a composed one of them is (jagg for jagg_retain)."""
    bases = {EXECUTOR_CLASSES[n].estimator_of for n in names} - {None, *names}
    return [*names, *sorted(b for b in bases if b is not None)]


def audited_executor(
    session: AuditSession,
    name: str,
    native: dict[str, Capture],
    floor: dict[str, Any],
    bf16: bool,
    estimators: dict[str, dict[str, Capture]],
) -> dict[str, Any]:
    """One executor's JSON: its step judged against native's (``judge``), and a composed executor's also against the
    executor whose estimator it is (``same_estimator``; its captures per term kept in ``estimators``)."""
    captures = {term: session.capture(name, variant=Variant(term)) for term in session.terms}
    result = judge(session, name, captures, native, floor, bf16)
    base = EXECUTOR_CLASSES[name].estimator_of
    if base is not None:
        if base not in estimators:
            estimators[base] = {term: session.capture(base, variant=Variant(term)) for term in session.terms}
        result[f"against_{base}"] = same_estimator(session, captures, estimators[base], floor)
        result["verdict"] = worst([result["verdict"], result[f"against_{base}"]["verdict"]])
    return result


def worst_entry(updates: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The update and term with the most severe verdict, the largest relative L2 among equals."""
    entries = [(u["update"], term, f) for u in updates for term, f in u["terms"].items()]
    if not entries:
        return None
    update, term, figures = max(entries, key=lambda e: (SEVERITY.index(e[2]["verdict"]), e[2]["rel_l2"]))
    return {"update": update, "term": term, "rel_l2": figures["rel_l2"], "verdict": figures["verdict"]}


def audit(spec_path: Path, names: list[str]) -> dict[str, Any]:
    """Run the audit on this rank; every rank returns the same report."""
    spec = load_spec(spec_path)
    if spec.model.precision not in PRECISIONS:
        raise SpecError("model.precision", "the audit has a class for fp32 and bf16 gradients: set 'fp32' or 'bf16'")
    unknown = [n for n in names if n not in EXECUTOR_CLASSES]
    if unknown:
        raise SpecError("executor.name", f"cannot audit {', '.join(unknown)}; auditable: {', '.join(EXECUTOR_CLASSES)}")
    if spec.algorithm.family == "forward":
        raise SpecError(
            "algorithm.name",
            f"the audit replays one rollout trajectory and compares executors' gradients with native's; "
            f"{spec.algorithm.name} trains on re-noised clean samples under native alone, so there is nothing to audit",
        )
    bf16 = spec.model.precision == "bf16"
    ranks = int(os.environ.get("WORLD_SIZE", "1"))  # torchrun's; the audit refuses before it builds the job
    if bf16 and spec.algorithm.prompts_per_step * spec.algorithm.group_size < 2 * ranks:
        raise SpecError(
            "algorithm.prompts_per_step",
            "a bf16 audit measures native against itself at another micro-batch split: it needs 2 or more samples "
            f"per rank (prompts_per_step × group_size ≥ 2 × {ranks} ranks)",
        )
    names = ["native", *[n for n in names if n != "native"]]
    session = AuditSession(spec, with_estimators(names))
    native = {term: session.capture("native", variant=Variant(term)) for term in session.terms}
    floor = native_floor(session, native)
    report: dict[str, Any] = {
        "spec": str(spec_path),
        "world_size": session.dist.world_size,
        "layout": session.layout,
        "sharding": session.job.sharding.strategy,
        "precision": spec.model.precision,
        "samples": session.batch.global_size,
        "trainable_parameters": sum(p.numel() for p in session.job.parameters),
        "reference_offset": session.offset,  # relative L2 of the move off the reference (None: not moved)
        "terms": session.terms,
        "updates": len(native["total"].gradients),
        "native_metrics": native["total"].metrics,
        "native_first_update_ratio_distance": first_update_ratio_distance(session, "native", native["total"]),
        "native_floor": floor,
        "executors": {},
    }
    estimators: dict[str, dict[str, Capture]] = {}
    for name in names[1:]:
        report["executors"][name] = audited_executor(session, name, native, floor, bf16, estimators)
    session.dist.barrier()
    session.dist.close()
    return report
