"""``jagg_reweight``: JAGG's estimator on Lean-Reweight's schedule (docs/executors.md "JAGG on Lean"; derived from
s_j = A·u_j: the provisional joint backward takes the u-aggregates, then the advantage scales it).

Each sample is rolled out alone as under lean_reweight. Its unrouted trained steps take lean_reweight's provisional
backward at once (−ℓ, unit advantage). In a routed group only the two endpoints are forwarded with grad
(jagg_groups.graph_mask): each step's unit-advantage upstream gradient u_j = ∂(−ℓ_j)/∂v_j is taken through the step
math alone on a detached copy of the rollout's velocity and folded into Σ(1−α_j)u_j and Σα_j u_j; the first
endpoint's graph is kept until the last endpoint's forward, then one joint backward through the two endpoints puts
the group's provisional gradient into ``.grad``. With a KL (``kl: extra_vjp``) its upstream gradients are aggregated
the same way and backwarded, unscaled, into the KL buffer first. The correction (× A·w/(NK)), the single reduction,
the clip and the step are lean_reweight's. The estimator is jagg's (class A): the audit holds its gradient to jagg's
up to summation order. Costs T + b·K_b forwards (docs/executors.md).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.base import StepResult
from trainer.executors.gradient_buffers import KlBuffer
from trainer.executors.graph_rollout import TrainedForward, rollout_with_graphs
from trainer.executors.jagg_groups import GroupUpstream, graph_mask, group_positions, routed_plan
from trainer.executors.lean_reweight import LeanReweightExecutor
from trainer.fsdp_gradients import gathered_through_backward
from trainer.job import TrainingJob
from trainer.layout import SampleBatch
from trainer.loss import reference_kl
from trainer.rollout import Trajectory
from trainer.sampling.sde_step import sde_step
from trainer.spec import JaggReweightOptions


class JaggReweightExecutor(LeanReweightExecutor):
    options_model = JaggReweightOptions
    options: JaggReweightOptions
    exactness_class = "A"
    estimator_of = "jagg"

    def __init__(self, job: TrainingJob, options: JaggReweightOptions) -> None:
        super().__init__(job, options)
        self.routed = 0  # the last step's routed groups per sample
        self.routes: dict[int, tuple[int, int]] = {}  # the rolling sample's routed step → (group, position in it)
        self.policy_sums: list[GroupUpstream] = []
        self.kl_sums: list[GroupUpstream] = []
        self.first_ends: dict[int, torch.Tensor] = {}  # group → its first endpoint's velocity, with its graph

    def exactness(self, plan: StepPlan) -> str:
        return "A"

    def audit_extra(self) -> dict[str, object]:
        return {"routed_groups": self.routed}

    def train_step(self, batch: SampleBatch) -> StepResult:
        result = super().train_step(batch)
        result.metrics["executor/routed_groups"] = float(self.routed)
        return result

    def sample_rollout(
        self, batch: SampleBatch, plan: StepPlan, row: int, provisional: Callable[[TrainedForward], None]
    ) -> Trajectory:
        """The sample's rollout with graphs at its routed groups' endpoints and its unrouted steps only."""
        job = self.job
        order, self.routed = routed_plan(plan.select(torch.tensor([row])), self.options)
        steps = order.trained[0]
        self.routes, self.policy_sums, self.kl_sums, self.first_ends = {}, [], [], {}
        for group in range(self.routed):
            positions = group_positions(self.options, group)
            first, last = steps[positions[0] : positions[0] + 1], steps[positions[-1] : positions[-1] + 1]
            self.policy_sums.append(GroupUpstream(job.denoiser.grid, first, last))
            self.kl_sums.append(GroupUpstream(job.denoiser.grid, first, last))
            self.routes |= {int(steps[p]): (group, j) for j, p in enumerate(positions)}
        mask = graph_mask(order, self.options, self.routed, job.algorithm.steps)
        return rollout_with_graphs(job, batch, plan, [row], provisional, mask)

    def provisional_backward(
        self, forward: TrainedForward, kl_buffer: KlBuffer | None, scale: float, kls: list[torch.Tensor]
    ) -> None:
        """An unrouted step's provisional backward as lean_reweight's; a routed step's u_j (and KL upstream)
        folded into its group's aggregates, and at the group's last endpoint the joint provisional backward."""
        route = self.routes.get(forward.step)
        if route is None:
            super().provisional_backward(forward, kl_buffer, scale, kls)
            return
        group, j = route
        job, grid = self.job, self.job.denoiser.grid
        index = grid.index(forward.step, len(forward.rows))
        proxy = forward.out.velocity.detach().requires_grad_(True)
        out = sde_step(proxy, forward.x, index, grid, forward.out.next)
        if kl_buffer is not None:
            kl = reference_kl(out.mean, forward.reference_mean, job.algorithm.kl_std(out))  # type: ignore[arg-type]
            kls.append(kl.detach())
            (k_j,) = torch.autograd.grad(job.spec.algorithm.kl_beta * kl * scale, proxy, retain_graph=True)
            self.kl_sums[group].add(k_j, index)
        (u_j,) = torch.autograd.grad(-out.log_prob.sum(), proxy)
        self.policy_sums[group].add(u_j, index)
        if j == 0:
            self.first_ends[group] = forward.out.velocity
        if j < self.options.group_width - 1:
            return
        ends = [self.first_ends.pop(group), forward.out.velocity]
        with gathered_through_backward(job.policy, job.sharding.fsdp):  # FSDP: one all-gather per unit
            if kl_buffer is not None:
                k_base, k_corr = self.kl_sums[group].aggregates
                kl_buffer.backward((ends[0] * k_base).sum() + (ends[1] * k_corr).sum())  # J_0ᵀk_base + J_lastᵀk_corr
            torch.autograd.backward(ends, self.policy_sums[group].aggregates)
