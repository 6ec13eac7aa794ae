"""``jagg``: Jacobian-aggregated group gradients (docs/executors.md §2; JAGG, arXiv 2607.17572).

Native's schedule, except that each sample's trained steps are sorted high noise first and cut
into consecutive groups of W = ``group_width``; the first n_J = round(jagg_frac · ⌈K/W⌉) *full*
groups are routed. In a routed group all W steps are forwarded, only the two endpoints with
grad; each step's upstream gradient s_j = ∂L_j/∂v̂_j comes from autograd through the step math
alone (a detached proxy v̂_j), and with α_j = (σ_0 − σ_j)/(σ_0 − σ_{W−1}) one joint backward
``backward([v_0, v_last], [Σ(1−α_j)s_j, Σα_j s_j])`` replaces W transformer backwards. The
Jacobian interpolation makes it approximate (class A): the audit reports its cosine overall and
per routed group, and in training ``probe_every`` N steps form each routed group's exact gradient
too (extra graphs and backwards, never added to the update) and log its cosine with the aggregated
one as ``executor/probe_cosine/g<k>``, printing a warning below ``cosine_warn``. Unrouted steps
take native's exact per-step backward; with jagg_frac = 0 nothing is routed and the step is
native's, in native's order.

Under FSDP2 (full fine-tuning) every backward of an update leaves its full gradient unreduced and one
reduce-scatter per FSDP unit follows the update's last backward, as under the Lean executors
(trainer/fsdp_gradients.py); a joint backward (the probe's too) keeps each unit gathered from its first
backward use to its end, so the two endpoint graphs all-gather a unit once, not once each.
"""

from __future__ import annotations

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.base import Executor, StepResult
from trainer.executors.gradient_cosine import gradient_cosine
from trainer.executors.jagg_groups import velocity_terms
from trainer.executors.step_report import StepReport
from trainer.fsdp_gradients import gathered_through_backward
from trainer.job import StepTerms, TrainingJob
from trainer.layout import SampleBatch
from trainer.rollout import Trajectory
from trainer.sampling.sde_step import sde_step
from trainer.spec import JaggOptions
from trainer.timing import device_seconds


class JaggExecutor(Executor):
    options_model = JaggOptions
    options: JaggOptions
    exactness_class = "A"

    def __init__(self, job: TrainingJob, options: JaggOptions) -> None:
        super().__init__(job, options)
        self.width = options.group_width
        self.probe_every = options.probe_every
        self.cosine_warn = options.cosine_warn
        self.group_cosines: list[float] = []

    def train_step(self, batch: SampleBatch) -> StepResult:
        job = self.job
        started = device_seconds(job.dist.device)
        report = StepReport(job.collectives)
        plan = job.plan(batch)
        with torch.no_grad():
            trajectory = job.rollout(batch, plan)
        rolled = device_seconds(job.dist.device)
        scores = job.score(trajectory, batch)
        advantages, stats, rewards = job.advantages(scores, batch)
        scored = device_seconds(job.dist.device)

        trained = plan.trained.shape[1]
        routed = self.options.routed_groups(trained)
        order = plan if routed == 0 else StepPlan(plan.sde, plan.trained.sort(dim=1).values, plan.weights)
        # The audit, or a probe step: also form each routed group's exact gradient.
        probe = job.replay is not None or bool(self.probe_every and batch.step % self.probe_every == 0)
        sync_seconds, backwards = 0.0, 0
        self.group_cosines = []
        for _ in range(job.spec.algorithm.inner_epochs):
            with job.deferred_reduction():  # one reduction per optimizer step, also under FSDP
                for group in range(routed):
                    positions = list(range(group * self.width, (group + 1) * self.width))
                    self.joint_backward(trajectory, order, positions, advantages, report, probe)
                    backwards += 1
                for position in range(routed * self.width, trained):
                    terms = job.trained_step(trajectory, order, position, advantages)
                    (terms.loss / trained).backward()
                    report.add(terms)
                    backwards += 1
            synced = device_seconds(job.dist.device)
            job.synchronize_gradients()
            sync_seconds += device_seconds(job.dist.device) - synced
            report.close_update(job.optimizer_step())
        finished = device_seconds(job.dist.device)
        times = {
            "rollout": rolled - started,
            "reward": scored - rolled,
            "train": finished - scored,
            "sync": sync_seconds,
        }
        executor = {
            "routed_groups": routed,
            "backward_passes": backwards,
            "retained_graphs": 2 * len(batch.prompts) if routed else len(batch.prompts),
            "buffer_bytes": 0,
            "sync_count": int(job.dist.world_size > 1) * job.spec.algorithm.inner_epochs,
        }
        if probe and routed:  # the first update's groups (a later inner epoch probes them again)
            cosines = self.group_cosines[:routed]
            executor |= {f"probe_cosine/g{k}": cosine for k, cosine in enumerate(cosines)}
            self.warn_below(batch.step, cosines)
        return StepResult(report.metrics(times, executor), trajectory, scores, stats, rewards)

    def warn_below(self, step: int, cosines: list[float]) -> None:
        """A line in the job log for each routed group whose probe cosine is under ``cosine_warn``, or NaN."""
        if self.cosine_warn is None or not self.job.dist.is_main:
            return
        for k, cosine in enumerate(cosines):
            if not cosine >= self.cosine_warn:  # NaN too
                print(f"jagg: step {step} routed group {k} cosine {cosine:.3f} is below cosine_warn {self.cosine_warn}")

    def joint_backward(
        self,
        trajectory: Trajectory,
        plan: StepPlan,
        positions: list[int],
        advantages: torch.Tensor,
        report: StepReport,
        probe: bool,
    ) -> None:
        """One routed group: W forwards (endpoints with grad), s_j by autograd through the step
        math only, α-weighted aggregation, one joint backward through the two endpoints."""
        job = self.job
        trained = plan.trained.shape[1]
        grid = job.denoiser.grid
        rows = torch.arange(trajectory.latents.shape[0], device=grid.device)
        trained_steps = plan.trained.to(grid.device)
        first, last = trained_steps[:, positions[0]], trained_steps[:, positions[-1]]
        span = grid.sigmas[first] - grid.sigmas[last]
        endpoints: list[torch.Tensor] = []
        upstream: list[tuple[torch.Tensor, torch.Tensor]] = []
        s_base = s_corr = None
        for j, position in enumerate(positions):
            index = trained_steps[:, position]
            x, x_next = trajectory.latents[rows, index], trajectory.latents[rows, index + 1]
            endpoint = j in (0, len(positions) - 1)
            with torch.set_grad_enabled(endpoint or probe):
                velocity = job.denoiser.velocity(job.policy, x, index, trajectory.cond, trajectory.uncond)
            proxy = velocity.detach().requires_grad_(True)
            terms = self.step_loss(proxy, x, x_next, index, trajectory, advantages, plan)
            (s_j,) = torch.autograd.grad(terms.loss / trained, proxy)
            report.add(terms)
            alpha = ((grid.sigmas[first] - grid.sigmas[index]) / span).reshape(-1, *([1] * (x.dim() - 1)))
            s_base = (1 - alpha) * s_j if s_base is None else s_base + (1 - alpha) * s_j
            s_corr = alpha * s_j if s_corr is None else s_corr + alpha * s_j
            if endpoint:
                endpoints.append(velocity)
            if probe:
                upstream.append((velocity, s_j))
        with gathered_through_backward(job.policy, job.sharding.fsdp):
            if probe:
                self.group_cosines.append(self.probe_cosine(upstream, endpoints, [s_base, s_corr]))  # type: ignore[list-item]
            torch.autograd.backward(endpoints, [s_base, s_corr])  # type: ignore[list-item]

    def step_loss(
        self,
        proxy: torch.Tensor,
        x: torch.Tensor,
        x_next: torch.Tensor,
        index: torch.Tensor,
        trajectory: Trajectory,
        advantages: torch.Tensor,
        plan: StepPlan,
    ) -> StepTerms:
        """Native's per-step loss (clipped surrogate + β·KL) as a function of the velocity alone."""
        job, grid = self.job, self.job.denoiser.grid
        reference = None
        if job.spec.algorithm.kl_beta > 0:
            with torch.no_grad():
                reference = sde_step(job.reference_velocity(x, index, trajectory), x, index, grid, x_next).mean
        old = trajectory.log_probs[torch.arange(x.shape[0], device=grid.device), index]
        return velocity_terms(job, proxy, x, x_next, index, old, advantages, plan, reference)

    def probe_cosine(
        self,
        upstream: list[tuple[torch.Tensor, torch.Tensor]],
        endpoints: list[torch.Tensor],
        aggregated: list[torch.Tensor],
    ) -> float:
        """cos(Σ_j J_jᵀ s_j, J_0ᵀ s_base + J_lastᵀ s_corr) for one routed group, on this rank's rows (under FSDP
        by the unsharded parameters the graphs were built from)."""
        params = self.job.gradient_slots()
        exact = [torch.zeros_like(p) for p in params]
        for velocity, s_j in upstream:
            grads = torch.autograd.grad(velocity, params, s_j, retain_graph=True, allow_unused=True)
            for total, grad in zip(exact, grads, strict=True):
                if grad is not None:
                    total.add_(grad)
        approx = torch.autograd.grad(endpoints, params, aggregated, retain_graph=True, allow_unused=True)
        filled = [g if g is not None else torch.zeros_like(p) for g, p in zip(approx, params, strict=True)]
        a = torch.cat([e.reshape(-1) for e in exact]).double()
        b = torch.cat([g.reshape(-1) for g in filled]).double()
        return gradient_cosine(a, b)

    def audit_extra(self) -> dict[str, object]:
        return {"routed_groups": len(self.group_cosines), "group_cosines": self.group_cosines}
