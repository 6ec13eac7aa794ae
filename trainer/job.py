"""``TrainingJob``: the pieces of one job that an executor composes into a training step.

It holds the model family, the trainable policy, the optimizer, the algorithm, the reward and
the process group, and offers the primitive operations of docs/algorithms.md — plan, roll out,
score, advantages, the loss at one trained step, gradient synchronisation, optimizer step.
It decides nothing about *when* these run; that is the executor's job (docs/executors.md).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import torch
from torch import nn

from trainer.advantages import Advantages, group_advantages
from trainer.algorithms.base import Algorithm, StepPlan
from trainer.algorithms.forward import ForwardAlgorithm, ForwardInputs, Renoised, velocity_kl
from trainer.algorithms.old_policy import OldPolicy
from trainer.algorithms.registry import make_algorithm
from trainer.distributed import Distributed, init_distributed
from trainer.edit_prompt import negative_prompt, prompt_key
from trainer.fsdp_gradients import (
    CollectiveCounts,
    count_collectives,
    reduce_scatter,
    reduction_deferred,
    reshard,
    unsharded_parameters,
)
from trainer.layout import SampleBatch, layout_error
from trainer.loss import PolicyTerms, clipped_policy_loss, reference_kl
from trainer.models.base import Conditioning, ModelFamily
from trainer.models.loading import load_family
from trainer.prompts import load_eval_prompts, load_prompts
from trainer.reference_policy import HostReference, meta_skeleton, sharded_reference
from trainer.rewards.background import BackgroundScorer
from trainer.rewards.registry import WeightedReward
from trainer.rollout import Trajectory, rollout, sample_noise
from trainer.sampling.denoising_step import DenoisingStep, row_chunks
from trainer.sampling.sde_step import sde_step
from trainer.sampling.step_grid import StepGrid
from trainer.sharding import Sharding, choose_sharding, local_value, shard_module
from trainer.spec import JobSpec, SpecError
from trainer.spec.prompt_cache import uncached_prompts
from trainer.step_memory import StepMeter, distinct_bytes


@dataclass
class Scores:
    total: torch.Tensor  # [B] local weighted sum
    parts: dict[str, torch.Tensor]  # name → [B] local raw scores


@dataclass
class StepTerms:
    """The loss of one trained step over the local rows, and what is logged about it. The logged values stay
    tensors on the step's device: the report reads them once per step, never inside the trained-step loop."""

    loss: torch.Tensor  # differentiable; policy + β·KL, mean over rows
    kl: torch.Tensor  # [] detached
    ratio: torch.Tensor  # [B]
    clipped: torch.Tensor  # [B] bool
    approx_kl: torch.Tensor  # [] detached

    @classmethod
    def of(
        cls, log_prob: torch.Tensor, old: torch.Tensor, policy: PolicyTerms, kl: torch.Tensor | None, kl_beta: float
    ) -> StepTerms:
        """The clipped policy loss plus β·KL (``kl`` None: no KL term) of a step whose log-probs are ``log_prob``."""
        loss = policy.loss if kl is None else policy.loss + kl_beta * kl
        logged_kl = torch.zeros((), device=log_prob.device) if kl is None else kl.detach()
        approx_kl = 0.5 * ((log_prob.detach() - old) ** 2).mean()
        return cls(loss, logged_kl, policy.ratio, policy.clipped, approx_kl)


@dataclass
class Replay:
    """A fixed trajectory and its scores: in replay mode (docs/executors.md §4) every executor's
    forwards see exactly these inputs instead of drawing noise, so gradients can be compared."""

    trajectory: Trajectory
    scores: Scores


# Called with ("sync", grads) before gradients are reduced and ("clip", grads) before clipping:
# the audit captures the gradient there, tests check what each stage sees.
GradientHook = Callable[[str, list[torch.Tensor]], None]


def quiet_libraries() -> None:
    """Progress bars of weight loading would drown the one-line-per-step job log."""
    import diffusers
    import transformers

    diffusers.utils.logging.disable_progress_bar()
    transformers.utils.logging.disable_progress_bar()


class TrainingJob:
    def __init__(
        self,
        spec: JobSpec,
        dist: Distributed,
        family: ModelFamily,
        algorithm: Algorithm,
        reward: WeightedReward,
        sharding: Sharding | None = None,
    ) -> None:
        self.spec = spec
        self.dist = dist
        self.family = family
        self.algorithm = algorithm
        self.denoiser = self.denoising_step(algorithm)
        self.reward = reward
        self.sharding = sharding or Sharding("ddp" if dist.world_size > 1 else "single", "default")
        self.policy: nn.Module = family.transformer
        self.parameters = [p for p in self.policy.parameters() if p.requires_grad]
        self.broadcast_parameters()
        # The KL's frozen reference under full fine-tuning (LoRA: the adapter disabled, no copy). Under FSDP it is
        # made after the sharding, sharded like the policy (trainer/reference_policy.py), never a full device copy.
        self.reference: nn.Module | None = None
        forward = algorithm if isinstance(algorithm, ForwardAlgorithm) else None
        needs_reference = (spec.algorithm.kl_beta > 0 or bool(forward and forward.uses_reference)) and (
            spec.model.finetune == "full"
        )
        skeleton = meta_skeleton(self.policy) if needs_reference and self.sharding.fsdp else None
        # model.reference 'cpu': the starting weights in host memory, swapped in for each reference forward.
        self.host_reference: HostReference | None = None
        if needs_reference and skeleton is None and spec.model.reference == "cpu":
            self.host_reference = HostReference(self.parameters)
        elif needs_reference and skeleton is None:
            self.reference = copy.deepcopy(self.policy).requires_grad_(False).eval()
        self.collectives = CollectiveCounts()
        self.deferred = False  # a Lean executor's backwards left their gradients unreduced (FSDP)
        if self.sharding.fsdp:  # after the broadcast: every rank shards the same weights
            shard_module(self.policy, family.compute_dtype)
            count_collectives(self.policy, self.collectives)
            if skeleton is not None:
                self.reference = sharded_reference(skeleton, self.policy, family.compute_dtype, dist.device)
                count_collectives(self.reference, self.collectives)
            self.parameters = [p for p in self.policy.parameters() if p.requires_grad]
        # The forward family's old policy (trainer/algorithms/old_policy.py): a copy of the trainable weights.
        self.old_policy = OldPolicy(self.parameters) if forward is not None else None
        # AWM's EMA of the policy, the other end of its EMA-KL: a second such copy.
        self.ema_policy = OldPolicy(self.parameters) if forward is not None and forward.ema_kl_beta > 0 else None
        self.optimizer = torch.optim.AdamW(
            self.parameters, lr=spec.algorithm.learning_rate, betas=(0.9, 0.999), weight_decay=1e-4, eps=1e-8
        )
        # fp16's narrow range needs the loss scaled up and the gradients unscaled before clipping (the spec
        # admits fp16 under native only); at bf16 and fp32 the scaler passes everything through.
        self.loss_scaler = torch.amp.GradScaler(dist.device.type, enabled=family.compute_dtype == torch.float16)
        self._conditioning: dict[tuple[str, Path | None], Conditioning] = {}  # by prompt_key: text and image
        self.scorer = BackgroundScorer(reward)
        self._scoring: Trajectory | None = None  # the rollout whose rewards the scorer holds
        self.replay: Replay | None = None
        self.gradient_hooks: list[GradientHook] = []
        self.layout = "sharded"  # which samples each rank holds (trainer/layout.py)
        self.prompts: list[str] = []  # the prompt pool steps draw from (set by build)
        self.eval_prompts: list[str] = list(spec.prompts.eval)  # sampled for the eval images (an edit set's rows)
        self.memory = StepMeter()  # what a measured step holds, by component (trainer/step_memory.py)

    @classmethod
    def build(cls, spec: JobSpec, layout: str, *, replicate: bool = False) -> TrainingJob:
        """The one set-up of a job, for the run, the audit and the bench: the process group, the
        rank layout checked, the reward (first: one that does not load is a spec error), the model, the
        algorithm on its σ grid, the sharding (``replicate``: a full replica per rank whatever
        ``model.sharding`` says, for several executors on one job), and the prompt pool."""
        quiet_libraries()
        dist = init_distributed(spec.resources.device_type)
        algo = spec.algorithm
        problem = layout_error(algo.prompts_per_step, algo.group_size, dist.world_size, layout)
        if problem:
            raise SpecError("algorithm.prompts_per_step", problem)
        torch.manual_seed(spec.seed)
        reward = WeightedReward(spec.reward, dist.device)
        family = load_family(spec.model, dist.device)
        algorithm = make_algorithm(algo, family.sigmas(algo.sampling_steps, algo.shift), spec.seed)
        sharding = None if replicate else choose_sharding(spec, dist.world_size)
        job = cls(spec, dist, family, algorithm, reward, sharding)
        job.layout, job.prompts = layout, load_prompts(spec.prompts.source)
        job.eval_prompts = load_eval_prompts(spec.prompts.source, spec.prompts.eval)
        job.place_text_encoders()
        return job

    def resize(self, spec: JobSpec) -> None:
        """The same weights, optimizer and process group at another K and batch (the advisor's probe,
        trainer/probe/): ``spec`` may differ from the job's only in train_timesteps and prompts_per_step."""
        sizes = {"train_timesteps", "prompts_per_step"}
        mine, theirs = self.spec.model_dump(), spec.model_dump()
        mine["algorithm"] = {k: v for k, v in mine["algorithm"].items() if k not in sizes}
        theirs["algorithm"] = {k: v for k, v in theirs["algorithm"].items() if k not in sizes}
        if mine | {"executor": None} != theirs | {"executor": None}:
            raise ValueError("resize changes only algorithm.train_timesteps and algorithm.prompts_per_step")
        algo = spec.algorithm
        self.spec = spec
        self.algorithm = make_algorithm(algo, self.family.sigmas(algo.sampling_steps, algo.shift), spec.seed)
        self.denoiser = self.denoising_step(self.algorithm)

    @contextmanager
    def variant(self, spec: JobSpec) -> Iterator[None]:
        """Inside the block the job runs under ``spec``, a variant of its own that changes only algorithm options
        read per step (the audit's: KL off, another micro-batch split, fewer updates); its own spec is back after
        the block, the very object, whatever the block raised."""
        own = self.spec
        self.spec = spec
        try:
            yield
        finally:
            self.spec = own

    # --- set-up --------------------------------------------------------------------------
    def denoising_step(self, algorithm: Algorithm) -> DenoisingStep:
        """The algorithm's step on its σ grid, the coefficients made once, on this job's device."""
        grid = StepGrid.build(algorithm.sigmas, algorithm.sde_kind, algorithm.level, self.dist.device)
        return DenoisingStep(self.family, grid, self.spec.algorithm.cfg_scale)

    def broadcast_parameters(self) -> None:
        """Every rank starts from rank 0's trainable weights (what DDP does at wrap time)."""
        with torch.no_grad():
            for param in self.parameters:
                self.dist.broadcast(param.data)

    def place_text_encoders(self) -> None:
        """``model.text_encoders`` 'cpu' or 'free': every prompt the job can meet (the pool, the eval prompts, the
        empty one under CFG) encoded once on the device and kept in host memory, then the encoders moved to the
        CPU or dropped; 'gpu' keeps them on the device and encodes prompts as they are met."""
        where = self.spec.model.text_encoders
        if where == "gpu":
            return
        problem = uncached_prompts(len(self.prompts))
        if where == "free" and problem:
            raise SpecError("model.text_encoders", problem)
        prompt_set = [*self.prompts, *self.eval_prompts]
        if self.spec.algorithm.cfg_scale > 1:
            prompt_set += [negative_prompt(p) for p in prompt_set]
        self.conditioning(prompt_set)
        self.family.place_text_encoders(where)
        if self.dist.device.type == "cuda":
            torch.cuda.empty_cache()  # the encoders' blocks go back to the device

    def conditioning(self, prompts: list[str]) -> Conditioning:
        """Text embeddings per prompt, encoded once and cached (the encoder is frozen): on the device while the
        encoders are there ('gpu'), else in host memory, copied to the device per call.

        Each prompt is encoded alone: batched with others its embedding moves in the last bits
        with the batch, and a resumed run, which meets its prompts in other batches, would drift.
        """
        on_host = self.spec.model.text_encoders != "gpu"
        missing = {prompt_key(p): p for p in prompts if prompt_key(p) not in self._conditioning}
        for key in sorted(missing, key=str):
            if self.family.text_encoders_freed:
                message = f"'free' dropped the text encoders after the prompt set; {key[0]!r} is not in it: use 'cpu'"
                raise SpecError("model.text_encoders", message)
            encoded = self.family.encode_prompts([missing[key]])
            self._conditioning[key] = encoded.pinned() if on_host else encoded
        return Conditioning.cat([self._conditioning[prompt_key(p)].to(self.dist.device) for p in prompts])

    def embedding_bytes(self) -> int:
        """Bytes of the cached prompt embeddings on the job's device (none when they are kept on the host)."""
        parts = [t for c in self._conditioning.values() for t in c.tensors()]
        return distinct_bytes(t for t in parts if t is not None and t.device.type == self.dist.device.type)

    def unconditional(self, prompts: list[str]) -> Conditioning | None:
        """CFG's unconditional branch for these rows: the empty prompt, with each row's own conditioning image."""
        if self.spec.algorithm.cfg_scale <= 1.0:
            return None
        return self.conditioning([negative_prompt(p) for p in prompts])

    # --- the algorithm's primitives ------------------------------------------------------
    def plan(self, batch: SampleBatch) -> StepPlan:
        return self.algorithm.plan(batch, self.dist)

    def rollout(self, batch: SampleBatch, plan: StepPlan) -> Trajectory:
        """``algorithm.rollout_chunks`` batched rollouts back to back (one by default), each chunk's
        rewards scored on the background thread while the next chunk samples."""
        if self.replay is not None:
            return self.replay.trajectory
        cond = self.conditioning(batch.prompts)
        uncond = self.unconditional(batch.prompts)
        self.scorer.discard()
        parts = []
        for rows in row_chunks(len(batch.prompts), self.spec.algorithm.rollout_chunks):
            chunk_plan = plan.select(rows)
            noise = sample_noise(self.algorithm, batch.step, batch.sample_ids[rows].tolist(), self.dist.device)
            device_rows = rows.to(self.dist.device)
            chunk_uncond = None if uncond is None else uncond.index(device_rows)
            part = rollout(self.denoiser, self.policy, chunk_plan, noise, cond.index(device_rows), chunk_uncond)
            self.scorer.submit(part.images, [batch.prompts[int(r)] for r in rows])
            parts.append(part)
        self._scoring = Trajectory.cat(parts, cond, uncond)
        return self._scoring

    def score(self, trajectory: Trajectory, batch: SampleBatch) -> Scores:
        """The rollout's background scores, joined here; a trajectory made elsewhere is scored now."""
        if self.replay is not None:
            return self.replay.scores
        if trajectory is self._scoring:
            self._scoring = None
            return Scores(*self.scorer.collect())
        self.scorer.discard()
        self.scorer.submit(trajectory.images, batch.prompts)
        return Scores(*self.scorer.collect())

    def velocity(
        self, module: nn.Module, x: torch.Tensor, index: torch.Tensor, cond: Conditioning, uncond: Conditioning | None
    ) -> torch.Tensor:
        """The velocity of every local row, forwarded in the rollout's chunks: the same batch shapes
        as the rollout, so the first ratio stays exactly 1."""
        return self.denoiser.velocity(module, x, index, cond, uncond, self.spec.algorithm.rollout_chunks)

    def advantages(self, scores: Scores, batch: SampleBatch) -> tuple[torch.Tensor, Advantages, torch.Tensor]:
        """Gather rewards and group ids from all ranks; return this rank's slice of A, the
        global statistics, and the gathered rewards (for logging)."""
        rewards = self.dist.all_gather(scores.total.double())
        group_ids = self.dist.all_gather(batch.group_ids)
        sample_ids = self.dist.all_gather(batch.sample_ids)
        algo = self.spec.algorithm
        stats = group_advantages(
            rewards,
            group_ids,
            global_std=bool(algo.global_std),
            clip=algo.adv_clip,
            eps=algo.advantage_eps,
            unbiased=bool(algo.unbiased_std),
        )
        position = {int(s): n for n, s in enumerate(sample_ids)}
        local = stats.values[[position[int(s)] for s in batch.sample_ids]]
        return local.to(self.dist.device), stats, rewards

    def trained_step(
        self, trajectory: Trajectory, plan: StepPlan, position: int, advantages: torch.Tensor
    ) -> StepTerms:
        """Forward the ``position``-th trained step of every local sample (with grad if enabled)
        and return its clipped policy loss plus β·KL (the forward family: ``forward_step``)."""
        if self.algorithm.family == "forward":
            return self.forward_step(trajectory, plan, position, advantages)
        spec, grid = self.spec.algorithm, self.denoiser.grid
        rows = torch.arange(trajectory.latents.shape[0], device=grid.device)
        index = plan.trained[:, position].to(grid.device)
        x, x_next = trajectory.latents[rows, index], trajectory.latents[rows, index + 1]
        velocity = self.velocity(self.policy, x, index, trajectory.cond, trajectory.uncond)
        out = sde_step(velocity, x, index, grid, x_next)
        old = trajectory.log_probs[rows, index]
        weights = None if plan.weights is None else plan.weights.to(x.device)
        terms = clipped_policy_loss(out.log_prob, old, advantages, spec.clip_range, weights)
        kl = None
        if spec.kl_beta > 0:
            with torch.no_grad():
                reference = sde_step(self.reference_velocity(x, index, trajectory), x, index, grid, x_next)
            kl = reference_kl(out.mean, reference.mean, self.algorithm.kl_std(out))
        return StepTerms.of(out.log_prob, old, terms, kl, spec.kl_beta)

    # --- the forward family (docs/algorithms.md §7) -----------------------------------------
    def sampling_weights(self, step: int) -> AbstractContextManager[None]:
        """The weights a step's rollout samples with: the old policy's where the forward algorithm says so."""
        algorithm = self.algorithm
        if self.old_policy is None or not isinstance(algorithm, ForwardAlgorithm):
            return nullcontext()
        if not algorithm.samples_with_old(step):
            return nullcontext()
        return self.old_policy.swapped_in(self.parameters)

    def follow_old_policy(self, step: int) -> None:
        """After step ``step``'s updates: old ← d · old + (1 − d) · θ with the algorithm's decay; the EMA alike."""
        if self.old_policy is not None and isinstance(self.algorithm, ForwardAlgorithm):
            self.old_policy.follow(self.parameters, self.algorithm.old_decay(step))
            if self.ema_policy is not None:
                self.ema_policy.follow(self.parameters, self.algorithm.ema_decay(step))

    def policy_copies(self) -> dict[str, OldPolicy]:
        """The copies of the weights a checkpoint keeps: the forward family's old policy and AWM's EMA."""
        copies = {"old": self.old_policy, "ema": self.ema_policy}
        return {kind: copy for kind, copy in copies.items() if copy is not None}

    def forward_step(
        self, trajectory: Trajectory, plan: StepPlan, position: int, advantages: torch.Tensor
    ) -> StepTerms:
        """The forward family's loss at the ``position``-th re-noising time of every local sample: its clean latent
        re-noised to that time's σ, the conditional velocity of the policy (with grad), of the old policy and of
        the reference (no grad), the algorithm's loss, plus β · mean (v_θ − v_ref)² (upstream's KL in v-space) and,
        for AWM, β_ema · mean (v_θ − v_ema)² to the policy's EMA."""
        algorithm, spec, grid = self.algorithm, self.spec.algorithm, self.denoiser.grid
        assert isinstance(algorithm, ForwardAlgorithm) and self.old_policy is not None and plan.noise_seeds is not None
        seeds = plan.noise_seeds[:, position]
        sigma = grid.sigma(plan.trained[:, position].to(grid.device))
        renoised = Renoised.draw(trajectory.latents[:, -1], sigma, seeds)
        x, cond = renoised.noised, trajectory.cond
        velocity = self.family.velocity(self.policy, x, renoised.sigma, cond, None, 1.0)
        old = reference = None
        with torch.no_grad():
            if algorithm.uses_old:
                with self.old_policy.swapped_in(self.parameters):
                    old = self.family.velocity(self.policy, x, renoised.sigma, cond, None, 1.0)
            if algorithm.uses_reference or spec.kl_beta > 0:
                reference = self.conditional_reference_velocity(x, renoised.sigma, cond)
            if self.ema_policy is not None:
                with self.ema_policy.swapped_in(self.parameters):
                    ema = self.family.velocity(self.policy, x, renoised.sigma, cond, None, 1.0)
        inputs = ForwardInputs(velocity, old, reference, renoised, advantages, seeds, self.dist)
        terms = algorithm.loss(inputs)
        kl = velocity_kl(velocity, reference) if spec.kl_beta > 0 and reference is not None else None
        loss = terms.loss
        if self.ema_policy is not None:
            loss = loss + algorithm.ema_kl_beta * velocity_kl(velocity, ema)
        log_ratio = terms.ratio.log()
        policy = PolicyTerms(loss, terms.ratio, terms.clipped)
        return StepTerms.of(log_ratio, torch.zeros_like(log_ratio), policy, kl, spec.kl_beta)

    @contextmanager
    def reference_weights(self) -> Iterator[nn.Module]:
        """The module whose forward is the reference's (no grad): the frozen copy on the device or sharded like the
        policy; the policy holding the host copy's weights (``model.reference: cpu``); or, under LoRA, the policy
        with its adapter disabled."""
        if self.reference is not None:
            yield self.reference
        elif self.host_reference is not None:
            with self.host_reference.swapped_in(self.parameters):
                yield self.policy
        else:
            with self.policy.disable_adapter():  # type: ignore[operator]
                yield self.policy

    def conditional_reference_velocity(self, x: torch.Tensor, sigma: torch.Tensor, cond: Conditioning) -> torch.Tensor:
        """The reference's conditional velocity."""
        with self.reference_weights() as reference:
            return self.family.velocity(reference, x, sigma, cond, None, 1.0)

    def reference_velocity(self, x: torch.Tensor, index: torch.Tensor, trajectory: Trajectory) -> torch.Tensor:
        """The reference's velocity at a trained step (CFG as the rollout's)."""
        with self.reference_weights() as reference:
            return self.velocity(reference, x, index, trajectory.cond, trajectory.uncond)

    # --- gradients -----------------------------------------------------------------------
    def gradient_slots(self) -> list[torch.Tensor]:
        """The tensors whose ``.grad`` a backward fills: the parameters, or under FSDP their full, unsharded
        counterparts, which hold the gradient while its reduction is deferred."""
        return unsharded_parameters(self.policy, self.parameters) if self.sharding.fsdp else self.parameters

    @contextmanager
    def deferred_reduction(self) -> Iterator[None]:
        """Backwards inside leave their gradients unreduced in ``gradient_slots()`` until
        ``synchronize_gradients`` reduces them once (FSDP; elsewhere reduction is deferred anyway)."""
        if not self.sharding.fsdp:
            yield
            return
        with reduction_deferred(self.policy):
            self.deferred = True
            yield

    def synchronize_gradients(self) -> None:
        """Average gradients over ranks in one coalesced all-reduce (after the last backward). Under FSDP
        each backward has already reduce-scattered them, unless reduction was deferred: then one
        reduce-scatter per FSDP unit now."""
        self.notify("sync")
        self.memory.note_gradients(distinct_bytes([s.grad for s in self.gradient_slots()]))
        if self.deferred:
            slots = self.gradient_slots()
            reduce_scatter(self.policy, self.parameters, [s.grad for s in slots], self.collectives)
            for slot in slots:
                slot.grad = None
            self.deferred = False
            return
        if self.dist.world_size == 1 or self.sharding.fsdp:
            return
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in self.parameters]
        flat = torch.cat([g.reshape(-1) for g in grads])
        self.collectives.reductions += 1
        flat = self.dist.all_reduce_mean(flat)
        offset = 0
        for param, grad in zip(self.parameters, grads, strict=True):
            count = grad.numel()
            param.grad = flat[offset : offset + count].view_as(param).clone()
            offset += count

    def notify(self, event: str) -> None:
        if self.gradient_hooks:
            holders = self.gradient_slots() if self.deferred else self.parameters
            grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in holders]
            for hook in self.gradient_hooks:
                hook(event, grads)

    def backward(self, loss: torch.Tensor) -> None:
        """Backward ``loss``, scaled when the job computes in fp16."""
        self.loss_scaler.scale(loss).backward()

    def optimizer_step(self) -> float:
        """Unscale (fp16), clip the (synchronised) gradient norm, step AdamW, zero the gradients. An fp16 step
        whose gradients overflowed is skipped and the scale lowered, as torch's GradScaler does."""
        self.loss_scaler.unscale_(self.optimizer)
        self.memory.note_gradients(distinct_bytes([p.grad for p in self.parameters]))
        self.notify("clip")
        norm = torch.nn.utils.clip_grad_norm_(self.parameters, self.spec.algorithm.max_grad_norm)
        self.loss_scaler.step(self.optimizer)
        self.loss_scaler.update()
        self.optimizer.zero_grad(set_to_none=True)
        if self.sharding.fsdp:  # an FSDP unit left unsharded by a no-grad forward holds the old weights
            reshard(self.policy)
        return float(local_value(norm))
