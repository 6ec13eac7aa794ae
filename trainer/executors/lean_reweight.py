"""``lean_reweight``: backward each trained step at once with unit advantage, correct later
(docs/executors.md §2, LeanGRPO *Reweight*, Algorithm 1).

Per prompt group, each of the rank's Q samples of that prompt (shared-prompt layout) is rolled
out alone; at every trained step the with-grad forward is backwarded immediately with the
provisional loss −ℓ (unit advantage) and its graph freed. After the sample's last trained step
its provisional gradient P_q leaves ``.grad`` into the regime's buffer (gradient_buffers.py).
Once the group's rewards are all-gathered, the correction H = Σ_q A_q w_q P_q / (NK) is formed
and added to the rank's accumulator. After the last group: divide by a deferred global std,
add the unscaled KL buffer, then **one** all-reduce, clip, step. The order correction → sync →
accumulate → clip → step is asserted at run time by a gradient hook.

Regimes (``executor.buffer_regime``): ``per_rank`` (R1, Q = 1), ``per_sample`` (R2),
``affine`` (R4); ``auto`` picks R1 when Q = 1, else R4 unless a group-std clip can bite
(G > A_max² + 1), then R2. Grad-sample hooks (R3) are not implemented: samples never share a
forward here. Run-time condition: with a global std (all regimes) or R4 the advantage clip must
not bite; ``on_adv_clip`` says fail (default), log (keep the unclipped gradient, counted) or
native_fallback (recompute the step natively on the stored trajectory, exactly).
KL with kl_beta > 0: the spec demands ``kl: extra_vjp``, one more VJP per trained step into an
unscaled buffer (``retain_graph`` on the first). Hybrid schedule (``after_first_update: native``):
with inner_epochs > 1 the later updates re-forward as native does (executors/recompute.py).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import ExitStack

import torch

from trainer.algorithms.base import StepPlan
from trainer.executors.base import Executor, StepResult
from trainer.executors.gradient_buffers import (
    AffineBuffers,
    KlBuffer,
    PerRankBuffer,
    PerSampleBuffers,
    ProvisionalBuffers,
    take_grads,
    tensor_bytes,
)
from trainer.executors.graph_rollout import TrainedForward, rollout_with_graphs
from trainer.executors.recompute import recompute_gradients, recompute_update
from trainer.executors.step_report import StepReport
from trainer.job import Scores, StepTerms, TrainingJob
from trainer.layout import SampleBatch
from trainer.loss import reference_kl
from trainer.models.base import Conditioning
from trainer.rollout import Trajectory
from trainer.spec import LeanReweightOptions
from trainer.timing import device_seconds

REGIMES = {"per_rank": PerRankBuffer, "per_sample": PerSampleBuffers, "affine": AffineBuffers}


class AdvantageClipError(RuntimeError):
    """The advantage clip bit where the correction assumed it would not (on_adv_clip: fail)."""


class LeanReweightExecutor(Executor):
    options_model = LeanReweightOptions
    options: LeanReweightOptions
    layout = "shared"

    def __init__(self, job: TrainingJob, options: LeanReweightOptions) -> None:
        super().__init__(job, options)
        self.pending = 0  # samples whose provisional gradient is not corrected yet
        job.gradient_hooks.append(self.check_order)

    def check_order(self, event: str, grads: list[torch.Tensor]) -> None:
        """Synchronisation and clipping must only ever see corrected gradients."""
        if self.pending:
            raise RuntimeError(f"lean_reweight: {event} saw {self.pending} uncorrected provisional gradient(s)")

    def regime(self, local: int) -> str:
        chosen = self.options.buffer_regime
        if chosen != "auto":
            return chosen
        spec = self.job.spec.algorithm
        if local == 1:
            return "per_rank"
        size = spec.group_size  # the largest |A| a group std allows (Samuelson's bound)
        largest = (size - 1) / math.sqrt(size) if spec.unbiased_std else math.sqrt(size - 1)
        if not spec.global_std and largest > spec.adv_clip:
            return "per_sample"
        return "affine"

    def train_step(self, batch: SampleBatch) -> StepResult:
        job, spec = self.job, self.job.spec.algorithm
        plan = job.plan(batch)
        rows, trained = len(batch.prompts), plan.trained.shape[1]
        scale = 1.0 / (rows * trained)  # native's mean over local rows and 1/K
        weights = [1.0] * rows if plan.weights is None else [float(w) for w in plan.weights]  # the host's plan
        weight_values = torch.tensor(weights, dtype=torch.float64, device=job.dist.device)
        report = StepReport(job.collectives)
        deferral = ExitStack()  # no gradient reduction until the corrected gradient is formed
        deferral.enter_context(job.deferred_reduction())
        slots = job.gradient_slots()  # under FSDP the full, unsharded gradients backward fills
        kl_buffer = KlBuffer(slots) if spec.kl_beta > 0 else None
        groups: dict[int, list[int]] = {}
        for row, group in enumerate(batch.group_ids.tolist()):
            groups.setdefault(group, []).append(row)
        regime = self.regime(len(next(iter(groups.values()))))
        clock = {"rollout": 0.0, "reward": 0.0, "train": 0.0, "sync": 0.0}
        kls: list[torch.Tensor] = []

        def provisional(forward: TrainedForward) -> None:
            began = device_seconds(job.dist.device)
            self.provisional_backward(forward, kl_buffer, scale, kls)
            clock["train"] += device_seconds(job.dist.device) - began

        accumulator: list[torch.Tensor] | None = None
        pieces: dict[int, Trajectory] = {}
        rewards_local: dict[int, torch.Tensor] = {}  # [1] on the job's device: no host read per sample
        parts: dict[int, dict[str, torch.Tensor]] = {}
        worst = torch.zeros((), dtype=torch.float64, device=job.dist.device)  # largest |A| assumed unclipped
        peak_bytes = 0
        for group_rows in groups.values():
            buffers: ProvisionalBuffers = REGIMES[regime](slots)
            for row in group_rows:
                began = device_seconds(job.dist.device)
                train_before = clock["train"]
                pieces[row] = self.sample_rollout(batch, plan, row, provisional)
                scored = device_seconds(job.dist.device)
                clock["rollout"] += scored - began - (clock["train"] - train_before)
                rewards_local[row], parts[row] = self.score(pieces[row], batch, row)
                clock["reward"] += device_seconds(job.dist.device) - scored
                self.pending += 1
                buffers.sample_done(weights[row], rewards_local[row])
            began = device_seconds(job.dist.device)
            local = torch.cat([rewards_local[r] for r in group_rows]).double()
            gathered = job.dist.all_gather(local)
            mean, std = gathered.mean(), gathered.std(unbiased=bool(spec.unbiased_std))
            divisor = torch.ones_like(std) if spec.global_std else std + spec.advantage_eps
            if not spec.global_std and regime == "affine":
                worst = torch.maximum(worst, (gathered - mean).abs().max() / divisor)
            if isinstance(buffers, AffineBuffers):
                buffers.close(mean, scale / divisor)
            else:
                values = (local - mean) / divisor
                if not spec.global_std:
                    values = values.clamp(-spec.adv_clip, spec.adv_clip)
                factors = values * weight_values[group_rows] * scale
                buffers.close(list(factors.unbind()))  # type: ignore[attr-defined]
            self.pending -= len(group_rows)
            corrected = take_grads(slots)
            if accumulator is None:
                accumulator = corrected
            else:
                for total, part in zip(accumulator, corrected, strict=True):
                    total.add_(part)
            extra = buffers.peak_bytes + tensor_bytes(accumulator) + (kl_buffer.bytes if kl_buffer else 0)
            peak_bytes = max(peak_bytes, extra)
            job.memory.note_gradients(extra + tensor_bytes(slots))  # and the working .grad of each backward
            clock["train"] += device_seconds(job.dist.device) - began

        began = device_seconds(job.dist.device)
        ordered = sorted(pieces)
        trajectory = join_pieces([pieces[r] for r in ordered])
        names = parts[ordered[0]].keys()
        scores = Scores(
            torch.cat([rewards_local[r] for r in ordered]).float(),
            {name: torch.cat([parts[r][name] for r in ordered]) for name in names},
        )
        advantages, stats, gathered_rewards = job.advantages(scores, batch)
        if spec.global_std:
            spread = gathered_rewards.double().std(unbiased=bool(spec.unbiased_std)) + spec.advantage_eps
            for total in accumulator or []:
                total.div_(spread)
            all_groups = job.dist.all_gather(batch.group_ids)
            centred = gathered_rewards.double() - group_means(gathered_rewards.double(), all_groups)
            worst = torch.maximum(worst, centred.abs().max() / spread)
        fallback = 0.0
        for slot, total in zip(slots, accumulator or [], strict=True):
            slot.grad = total
        assumed = float(worst)  # the step's one host read of its advantages
        if assumed > spec.adv_clip:
            policy = self.options.on_adv_clip
            if policy == "fail":
                deferral.close()
                raise AdvantageClipError(
                    f"lean_reweight: |A| reached {assumed:.3f} > adv_clip {spec.adv_clip}; the deferred correction "
                    "would be inexact (set executor.on_adv_clip to 'native_fallback' or 'log')"
                )
            if policy == "native_fallback":
                fallback = 1.0
                self.recompute_natively(trajectory, plan, advantages)
        if kl_buffer is not None and not fallback:
            kl_buffer.add_to_grads()
        clock["train"] += device_seconds(job.dist.device) - began
        deferral.close()
        synced = device_seconds(job.dist.device)
        job.synchronize_gradients()
        clock["sync"] += device_seconds(job.dist.device) - synced
        began = device_seconds(job.dist.device)
        # Native's terms of this update at ρ = 1 (nothing clipped): −mean(A·w) + β·KL, both over (sample, step).
        device = advantages.device
        kl = torch.stack(kls).mean() if kls else torch.zeros((), device=device)
        loss = -(advantages * torch.tensor(weights, device=device)).mean() + spec.kl_beta * kl
        ones, unclipped = torch.ones(rows, device=device), torch.zeros(rows, dtype=torch.bool, device=device)
        report.add(StepTerms(loss, kl, ones, unclipped, torch.zeros((), device=device)))
        report.close_update(job.optimizer_step())
        clock["train"] += device_seconds(job.dist.device) - began
        began = device_seconds(job.dist.device)
        for _ in range(spec.inner_epochs - 1):  # the hybrid schedule's later updates
            clock["sync"] += recompute_update(job, trajectory, plan, advantages, report)
        clock["train"] += device_seconds(job.dist.device) - began
        executor = {
            "retained_graphs": 1,
            "buffer_bytes": peak_bytes,
            "buffer_regime": REGIMES[regime].regime,
            "sync_count": int(job.dist.world_size > 1) * spec.inner_epochs,
            "adv_abs_max_assumed": assumed,
            "native_fallback": fallback,
        }
        return StepResult(report.metrics(clock, executor), trajectory, scores, stats, gathered_rewards)

    def sample_rollout(
        self, batch: SampleBatch, plan: StepPlan, row: int, provisional: Callable[[TrainedForward], None]
    ) -> Trajectory:
        """Sample ``row`` rolled out alone, each trained step's with-grad forward handed to ``provisional``."""
        return rollout_with_graphs(self.job, batch, plan, [row], provisional)

    def provisional_backward(
        self, forward: TrainedForward, kl_buffer: KlBuffer | None, scale: float, kls: list[torch.Tensor]
    ) -> None:
        """One trained step's provisional backward: −ℓ (unit advantage) into ``.grad``, β·KL·scale (when there is a
        KL) into its unscaled buffer first, keeping the graph for the former."""
        if kl_buffer is not None:
            kl = reference_kl(forward.out.mean, forward.reference_mean, self.job.algorithm.kl_std(forward.out))  # type: ignore[arg-type]
            kls.append(kl.detach())
            kl_buffer.backward(self.job.spec.algorithm.kl_beta * kl * scale)
        (-forward.out.log_prob.sum()).backward()

    def score(self, piece: Trajectory, batch: SampleBatch, row: int) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """The sample's reward ([1], where it was scored) as soon as it is decoded (R4 folds it in before the next
        sample); it is not read on the host."""
        if self.job.replay is not None:
            stored = self.job.replay.scores
            return stored.total[row : row + 1], {k: v[row : row + 1] for k, v in stored.parts.items()}
        total, parts = self.job.reward(piece.images, [batch.prompts[row]])
        return total[:1], parts

    def recompute_natively(self, trajectory: Trajectory, plan: StepPlan, advantages: torch.Tensor) -> None:
        """The exact (clipped) gradient by native's re-forward on the stored trajectory."""
        for slot in self.job.gradient_slots():
            slot.grad = None
        recompute_gradients(self.job, trajectory, plan, advantages, None)


def group_means(rewards: torch.Tensor, group_ids: torch.Tensor) -> torch.Tensor:
    groups, inverse = torch.unique(group_ids, return_inverse=True)
    inverse = inverse.to(rewards.device)
    zeros = torch.zeros(len(groups), dtype=rewards.dtype, device=rewards.device)
    sums = zeros.clone().index_add_(0, inverse, rewards)
    counts = zeros.clone().index_add_(0, inverse, torch.ones_like(rewards))
    return (sums / counts)[inverse]


def join_pieces(pieces: list[Trajectory]) -> Trajectory:
    """The per-sample rollouts as one batch trajectory (for logging, scoring and a fallback)."""
    uncond = None if pieces[0].uncond is None else Conditioning.cat([p.uncond for p in pieces])  # type: ignore[misc]
    return Trajectory(
        torch.cat([p.latents for p in pieces]),
        torch.cat([p.log_probs for p in pieces]),
        Conditioning.cat([p.cond for p in pieces]),
        uncond,
        torch.cat([p.images for p in pieces]),
    )
