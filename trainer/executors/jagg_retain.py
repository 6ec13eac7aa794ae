"""``jagg_retain``: JAGG's estimator on Lean-Retain's schedule (docs/executors.md "JAGG on Lean"; the composition
is derived in the JAGG section of the executor reference: s_j = A·u_j, so the update forwards disappear).

The rank's samples are rolled out together as under lean_retain, but only the graphs JAGG backwards are kept:
each routed group's two endpoints and every unrouted step (jagg_groups.graph_mask); a routed group's interior
steps are forwarded without grad and keep only their velocity. After scoring, each routed group's upstream
gradients s_j come from autograd through the step math alone, on a detached copy of the rollout's velocity, and
are aggregated with JAGG's α_j; unrouted steps form native's surrogate from their kept graphs (lean_retain's
``retained_terms``). One backward then consumes every kept graph: the routed groups' endpoints with their
aggregates and the unrouted steps' losses (rows of one rollout step share its graph, so they are backwarded
together). The estimator is jagg's (class A): its gradient equals jagg's up to summation order, which the audit
checks against jagg as well as native. Costs T + b·K_b forwards (docs/executors.md), jagg's K update forwards gone.

The memory guard is lean_retain's with K_b graphs per sample instead of K; ``on_memory_guard`` falls back to
``jagg`` or ``jagg_reweight`` with the same routing. The hybrid schedule (``after_first_update: native``) re-forwards
the later updates as native does.
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.base import Executor
from trainer.executors.graph_rollout import TrainedForward
from trainer.executors.jagg_groups import GroupUpstream, graph_mask, group_positions, routed_plan, velocity_terms
from trainer.executors.lean_retain import LeanRetainExecutor, retained_terms
from trainer.executors.step_report import StepReport
from trainer.fsdp_gradients import gathered_through_backward
from trainer.job import TrainingJob
from trainer.rollout import Trajectory
from trainer.spec import OPTION_MODELS, JaggRetainOptions


class JaggRetainExecutor(LeanRetainExecutor):
    options_model = JaggRetainOptions
    options: JaggRetainOptions
    exactness_class = "A"
    estimator_of = "jagg"

    def exactness(self, plan: StepPlan) -> str:
        return "A"

    def __init__(self, job: TrainingJob, options: JaggRetainOptions) -> None:
        super().__init__(job, options)
        self.routed = 0  # the last step's routed groups

    def audit_extra(self) -> dict[str, object]:
        return {"routed_groups": self.routed}

    def guard_schedule(self) -> Executor:
        """The fallback schedule, routing as this one does."""
        from trainer.executors.registry import make_executor

        model = OPTION_MODELS[self.options.on_memory_guard]
        carried = {
            key: value
            for key, value in self.options.model_dump().items()
            if key in model.model_fields and key not in ("name", "on_memory_guard")
        }
        if "kl" in model.model_fields:
            carried["kl"] = "extra_vjp"
        return make_executor(model(**carried), self.job)

    def graph_mask(self, plan: StepPlan) -> torch.Tensor | None:
        """Each routed group's two endpoints and every unrouted step, in jagg's sorted order."""
        order, routed = routed_plan(plan, self.options)
        return graph_mask(order, self.options, routed, self.job.algorithm.steps)

    def backward_kept(
        self,
        forwards: dict[int, list[TrainedForward]],
        graphs: dict[int, TrainedForward],
        plan: StepPlan,
        trajectory: Trajectory,
        advantages: torch.Tensor,
        report: StepReport,
    ) -> dict[str, float]:
        """One backward through every kept graph: the routed groups' endpoints with their aggregates, the unrouted
        steps with native's loss."""
        job = self.job
        order, self.routed = routed_plan(plan, self.options)
        trained = order.trained.shape[1]
        tensors: list[torch.Tensor] = []
        cotangents: list[torch.Tensor] = []
        for group in range(self.routed):
            positions = group_positions(self.options, group)
            ends, aggregates = self.group_upstream(forwards, order, positions, trajectory, advantages, report)
            tensors += ends
            cotangents += aggregates
        losses = []
        for position in range(self.routed * self.options.group_width, trained):
            terms = retained_terms(job, graphs, order.trained[:, position].tolist(), trajectory, order, advantages)
            losses.append(terms.loss / trained)
            report.add(terms)
        if losses:
            tensors.append(torch.stack(losses).sum())
            cotangents.append(torch.ones((), device=job.dist.device))
        with gathered_through_backward(job.policy, job.sharding.fsdp):  # FSDP: one all-gather per unit
            torch.autograd.backward(tensors, cotangents)
        return {"routed_groups": float(self.routed)}

    def group_upstream(
        self,
        forwards: dict[int, list[TrainedForward]],
        plan: StepPlan,
        positions: list[int],
        trajectory: Trajectory,
        advantages: torch.Tensor,
        report: StepReport,
    ) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        """One routed group: its two endpoint velocities (with the rollout's graphs) and their cotangents
        [Σ(1−α_j)s_j, Σα_j s_j], each s_j through the step math on the rollout's velocity."""
        job, grid = self.job, self.job.denoiser.grid
        trained = plan.trained.shape[1]
        rows = torch.arange(trajectory.latents.shape[0], device=grid.device)
        sums = GroupUpstream(grid, plan.trained[:, positions[0]], plan.trained[:, positions[-1]])
        ends = []
        for j, position in enumerate(positions):
            column = plan.trained[:, position]
            index = column.to(grid.device)
            velocity, reference = rollout_velocity(forwards, column.tolist())
            x, x_next = trajectory.latents[rows, index], trajectory.latents[rows, index + 1]
            proxy = velocity.detach().requires_grad_(True)
            old = trajectory.log_probs[rows, index]
            terms = velocity_terms(job, proxy, x, x_next, index, old, advantages, plan, reference)
            (s_j,) = torch.autograd.grad(terms.loss / trained, proxy)
            report.add(terms)
            sums.add(s_j, index)
            if j in (0, len(positions) - 1):
                ends.append(velocity)
        return ends, sums.aggregates


def rollout_velocity(
    forwards: dict[int, list[TrainedForward]], steps: list[int]
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Row r's rollout velocity at step ``steps[r]`` (with its graph where one was kept) and its μ_ref (None
    without a KL): the forward's own tensors when one forward holds every row in order."""
    picked = []
    for row, step in enumerate(steps):
        forward = next(f for f in forwards[step] if row in f.rows)
        picked.append((forward, forward.rows.index(row)))
    first = picked[0][0]
    if all(f is first for f, _ in picked) and first.rows == list(range(len(steps))):
        return first.out.velocity, first.reference_mean
    velocity = torch.stack([f.out.velocity[n] for f, n in picked])
    if first.reference_mean is None:
        return velocity, None
    return velocity, torch.stack([f.reference_mean[n] for f, n in picked])  # type: ignore[index]
