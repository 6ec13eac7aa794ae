"""``lean_retain``: keep the rollout's graphs, backward them once the advantages are known
(docs/executors.md §2, LeanGRPO *Retain*).

The rank's samples are rolled out together, in the batch shape native re-forwards, with every
trained step forwarded with grad; its log-prob graph is kept and the next latent detached.
After scoring, native's exact surrogate (ρ = exp(ℓ − ℓ_old), which is 1, clipped, + β·KL with μ_ref
taken during the rollout) is formed per training position from the kept graphs, and every graph is
backwarded exactly once, so the backward touches the rows native's re-forwards do (only rows that train
at a step carry a graph there, graph_rollout.py). Positions whose rows share no graph (Flow-GRPO: one
step per position, all rows) are backwarded one by one in native's order, so the gradient is native's
bit for bit (class E0); positions linked by shared graphs (DanceGRPO's and Flash-GRPO's per-sample
steps) are summed and backwarded once, which sums in another order (class E1). Since the whole local
batch is one round, the advantages (global std and clip included) are final before any backward.

Memory guard: when ``retained_graph_bound`` exceeds ``executor.max_retained_graphs`` the spec
is refused, unless ``on_memory_guard`` declares a fallback schedule, which then runs every step. Left out, with a
``resources.memory_budget``, the limit is the most graphs that fit the budget, measured on the first measured step
(retained_graph_budget.py): over it the job fails naming the budget, or the fallback runs from the next step on.

Hybrid schedule (``executor.after_first_update: native``): with several optimizer steps per rollout
(``algorithm.inner_epochs``), the kept graphs give the first update only; the later ones re-forward
as native does, so the whole step is still native's (docs/executors.md §2).
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.base import Executor, StepResult
from trainer.executors.graph_rollout import TrainedForward, rollout_with_graphs
from trainer.executors.recompute import recompute_update
from trainer.executors.retained_graph_budget import RetainedGraphBudget
from trainer.executors.step_report import StepReport
from trainer.job import StepTerms, TrainingJob
from trainer.layout import SampleBatch
from trainer.loss import clipped_policy_loss, reference_kl
from trainer.rollout import Trajectory
from trainer.spec import LeanRetainOptions, SpecError, default_options, retained_graph_bound
from trainer.spec.job import guards
from trainer.timing import device_seconds


class LeanRetainExecutor(Executor):
    options_model = LeanRetainOptions
    options: LeanRetainOptions
    layout = "shared"

    def __init__(self, job: TrainingJob, options: LeanRetainOptions) -> None:
        super().__init__(job, options)
        self.fallback: Executor | None = None
        limit = options.max_retained_graphs
        if limit is not None and retained_graph_bound(job.spec) > limit:
            self.fallback = self.guard_schedule()
        # Without a limit, a memory budget sets one from the first measured step's graphs.
        self.budget_pending = limit is None and job.spec.resources.memory_budget is not None
        self.kept = 0  # graphs the last step kept

    def guard_schedule(self) -> Executor:
        from trainer.executors.registry import make_executor

        return make_executor(default_options(self.options.on_memory_guard), self.job)

    def apply_budget(self) -> None:
        """Once a step of this executor was measured: the graphs that fit ``resources.memory_budget``, and the
        guard's schedule (or a failure naming the budget) when the step keeps more."""
        measured, budget = self.job.memory.last, self.job.spec.resources.memory_budget
        if not self.budget_pending or measured is None or budget is None or not self.kept:
            return
        self.budget_pending = False
        fitting = RetainedGraphBudget.measured(budget, measured, self.kept)
        bound = retained_graph_bound(self.job.spec)
        if bound <= fitting.graphs_that_fit():
            return
        if self.options.on_memory_guard == "fail":
            advice = f"raise it, or set executor.on_memory_guard to {guards(self.options)}"
            message = f"{fitting.sentence(bound, self.name)}; {advice}"
            raise SpecError("resources.memory_budget", message)
        self.fallback = self.guard_schedule()

    def exactness(self, plan: StepPlan) -> str:
        """E0 when each backward is one of native's (one step for every row at each position, no graph
        shared between positions) and gradients are reduced as native's are (not FSDP, whose native
        reduce-scatters every backward); E1 otherwise."""
        same_step = bool((plan.trained == plan.trained[:1]).all())
        one_by_one = all(len(group) == 1 for group in backward_groups(plan))
        return "E0" if same_step and one_by_one and not self.job.sharding.fsdp else "E1"

    def train_step(self, batch: SampleBatch) -> StepResult:
        self.apply_budget()
        if self.fallback is not None:
            result = self.fallback.train_step(batch)
            result.metrics["executor/memory_guard_fallback"] = 1.0
            return result
        return self.retained_step(batch)

    def retained_step(self, batch: SampleBatch) -> StepResult:
        """One step from the rollout's kept graphs (the memory guard let it run)."""
        job = self.job
        started = device_seconds(job.dist.device)
        report = StepReport(job.collectives)
        plan = job.plan(batch)
        forwards: dict[int, list[TrainedForward]] = {}
        rows = list(range(len(batch.prompts)))
        keep = self.graph_mask(plan)
        trajectory = rollout_with_graphs(
            job, batch, plan, rows, lambda f: forwards.setdefault(f.step, []).append(f), keep
        )
        graphs = {step: f for step, parts in forwards.items() for f in parts if f.kept}
        retained = sum(len(forward.rows) for forward in graphs.values())
        self.kept = retained
        job.memory.mark_retained()
        rolled = device_seconds(job.dist.device)
        scores = job.score(trajectory, batch)
        advantages, stats, rewards = job.advantages(scores, batch)
        scored = device_seconds(job.dist.device)

        with job.deferred_reduction():  # one reduction per optimizer step, also under FSDP
            extra = self.backward_kept(forwards, graphs, plan, trajectory, advantages, report)
        forwards.clear()
        graphs.clear()
        synced = device_seconds(job.dist.device)
        job.synchronize_gradients()
        sync_seconds = device_seconds(job.dist.device) - synced
        report.close_update(job.optimizer_step())
        for _ in range(job.spec.algorithm.inner_epochs - 1):  # the hybrid schedule's later updates
            sync_seconds += recompute_update(job, trajectory, plan, advantages, report)
        finished = device_seconds(job.dist.device)
        times = {
            "rollout": rolled - started,
            "reward": scored - rolled,
            "train": finished - scored,
            "sync": sync_seconds,
        }
        syncs = int(job.dist.world_size > 1) * job.spec.algorithm.inner_epochs
        executor = {"retained_graphs": retained, "buffer_bytes": 0, "sync_count": syncs, **extra}
        return StepResult(report.metrics(times, executor), trajectory, scores, stats, rewards)

    def graph_mask(self, plan: StepPlan) -> torch.Tensor | None:
        """The trained (row, step) pairs whose rollout forward keeps its graph: all of them (None)."""
        return None

    def backward_kept(
        self,
        forwards: dict[int, list[TrainedForward]],
        graphs: dict[int, TrainedForward],
        plan: StepPlan,
        trajectory: Trajectory,
        advantages: torch.Tensor,
        report: StepReport,
    ) -> dict[str, float]:
        """Backward every kept graph once, native's loss per training position in native's order; the
        executor's own metrics (none here)."""
        trained = plan.trained.shape[1]
        for positions in backward_groups(plan):
            losses = []
            for position in positions:
                steps = plan.trained[:, position].tolist()
                terms = retained_terms(self.job, graphs, steps, trajectory, plan, advantages)
                losses.append(terms.loss / trained)
                report.add(terms)
            sum(losses).backward()  # type: ignore[union-attr]
        return {}


def retained_terms(
    job: TrainingJob,
    graphs: dict[int, TrainedForward],
    steps: list[int],
    trajectory: Trajectory,
    plan: StepPlan,
    advantages: torch.Tensor,
) -> StepTerms:
    """Native's loss at one training position (row r at step ``steps[r]``), from the kept graphs instead of a
    re-forward."""
    spec, algorithm, device = job.spec.algorithm, job.algorithm, job.dist.device
    rows = torch.arange(len(steps), device=device)
    kept = [(graphs[s], graphs[s].rows.index(r)) for r, s in enumerate(steps)]
    if len(set(steps)) == 1 and kept[0][0].rows == list(range(len(steps))):  # one graph holds the position
        forward = kept[0][0]
        log_prob, mean, kl_std, reference = (
            forward.out.log_prob,
            forward.out.mean,
            algorithm.kl_std(forward.out),
            forward.reference_mean,
        )
    else:  # per-row steps (DanceGRPO, Flash-GRPO): each row from the graph of its own step
        log_prob = torch.stack([f.out.log_prob[n] for f, n in kept])
        mean = torch.stack([f.out.mean[n] for f, n in kept])
        kl_std = torch.stack([algorithm.kl_std(f.out)[n] for f, n in kept])
        reference = None
        if spec.kl_beta > 0:
            reference = torch.stack([f.reference_mean[n] for f, n in kept])  # type: ignore[index]
    old = trajectory.log_probs[rows, torch.tensor(steps, device=device)]
    weights = None if plan.weights is None else plan.weights.to(old.device)
    terms = clipped_policy_loss(log_prob, old, advantages, spec.clip_range, weights)
    kl = reference_kl(mean, reference, kl_std) if spec.kl_beta > 0 else None  # type: ignore[arg-type]
    return StepTerms.of(log_prob, old, terms, kl, spec.kl_beta)


def backward_groups(plan: StepPlan) -> list[list[int]]:
    """Training positions in native's order, joined where their rows share a kept graph (the same step),
    so that one backward per group consumes every graph exactly once."""
    owner: dict[int, int] = {}  # step → the first position using it
    parent = list(range(plan.trained.shape[1]))

    def root(position: int) -> int:
        while parent[position] != position:
            position = parent[position]
        return position

    for position in range(plan.trained.shape[1]):
        for step in set(plan.trained[:, position].tolist()):
            if step in owner:
                parent[root(position)] = root(owner[step])
            else:
                owner[step] = position
    groups: dict[int, list[int]] = {}
    for position in range(plan.trained.shape[1]):
        groups.setdefault(root(position), []).append(position)
    return list(groups.values())
