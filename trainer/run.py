"""The training loop, top to bottom: set up, then for each step roll out, score, train, report.

Started by ``python -m trainer run`` (under ``torchrun`` for several ranks). Only rank 0 talks
to the platform; every rank computes.
"""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import torch
from PIL import Image

from trainer.checkpoint import (
    TrainingState,
    export_model,
    latest_checkpoint,
    load_checkpoint,
    load_policy_copies,
    policy_copies_state,
    save_checkpoint,
    trainable_state,
    training_state,
)
from trainer.dataset_fetch import with_local_datasets
from trainer.distributed import Distributed
from trainer.executors.base import StepResult
from trainer.executors.registry import EXECUTOR_CLASSES, make_executor
from trainer.job import TrainingJob
from trainer.layout import SampleBatch, step_batch
from trainer.reporting.reporter import Reporter
from trainer.rollout import sample_ode
from trainer.sharding import full_state
from trainer.spec import JobSpec, parse_spec
from trainer.step_memory import StepMemory, measure_step
from trainer.timing import device_seconds

TRAIN_SAMPLES = 4  # rollout images (rank 0's first rows) posted with their rewards at each eval step
METRICS_FILE = "metrics.jsonl"  # every step's metrics, also without a server (resume tests, bench)
MEAN_ACROSS_RANKS = ("loss", "kl", "approx_kl", "clip_frac", "ratio/mean")


def load_spec(path: Path) -> JobSpec:
    return parse_spec(json.loads(path.read_text()), base_dir=str(path.parent))


def run(spec_path: Path, output_dir: Path, resume: bool) -> None:
    spec = with_local_datasets(load_spec(spec_path), output_dir)  # a team dataset fetched into the job's folder
    job = TrainingJob.build(spec, EXECUTOR_CLASSES[spec.executor.name].layout)
    dist, sharding = job.dist, job.sharding
    output_dir.mkdir(parents=True, exist_ok=True)
    reporter = Reporter.from_environment(output_dir) if dist.is_main else None
    executor = make_executor(spec.executor, job)
    total = spec.algorithm.total_steps

    first_step = 1
    checkpoint = latest_checkpoint(output_dir) if resume else None
    if checkpoint is not None:
        first_step = load_checkpoint(checkpoint, job.policy, job.optimizer, sharding.fsdp) + 1
        missing = load_policy_copies(checkpoint, job.policy_copies(), job.parameters)
        if reporter:
            reporter.print(f"resumed from {checkpoint} at step {first_step}")
            for kind in missing:
                reporter.print(
                    f"{checkpoint.name} holds no {kind} policy copy (an older checkpoint): "
                    "it restarts from the checkpoint's weights"
                )
    if reporter:
        reporter.print(
            f"job {spec.name}: {spec.algorithm.name} / {spec.executor.name}, {dist.world_size} rank(s), "
            f"{sum(p.numel() for p in job.parameters)} trainable parameters, steps {first_step}..{total}, "
            f"{sharding.describe()}"
        )

    # The base model's eval samples, before the first step: the gallery's "before" column (a resumed run has them).
    if first_step == 1 and spec.samples.count > 0 and (dist.is_main or sharding.fsdp):
        evaluate(job, 0, output_dir, reporter)
    # executor.audit_first_step: the audit's figures on step 1, logged with its metrics once (a resumed run has them).
    audited: dict[str, float] = {}
    if spec.executor.audit_first_step and first_step == 1:
        from trainer.first_step_audit import first_step_audit  # the audit imports this module's load_spec

        audited = first_step_audit(job)
    if reporter and audited:
        reporter.print("first-step audit against native: " + ", ".join(f"{k} {v:.6g}" for k, v in audited.items()))
    for step in range(first_step, total + 1):
        started = device_seconds(dist.device)
        algo = spec.algorithm
        batch = step_batch(
            job.prompts, step, spec.seed, algo.prompts_per_step, algo.group_size, dist.rank, dist.world_size, job.layout
        )
        # CUDA reads every step's memory at no cost; on the CPU the profiler slows a step tenfold, so only each
        # attempt's first step, the warm-up the throughput figure leaves out, is measured (docs/trainer.md).
        memory = None
        if dist.device.type == "cuda" or step == first_step:
            result, memory = measure_step(job, lambda b=batch: executor.train_step(b))
        else:
            result = executor.train_step(batch)
        metrics = step_metrics(result, job, dist, device_seconds(dist.device) - started, memory)
        if step == 1:
            metrics |= audited
        if dist.is_main:
            with open(output_dir / METRICS_FILE, "a") as log:
                log.write(json.dumps({"step": step, **metrics}) + "\n")
        if reporter:
            reporter.metrics(step, metrics)
            reporter.progress(step, total, metrics["reward/mean"], metrics["throughput/samples_per_s"])
            reporter.print(
                f"step {step}/{total} reward {metrics['reward/mean']:.4f} ± {metrics['reward/std']:.4f} "
                f"loss {metrics['loss']:+.3e} kl {metrics['kl']:.2e} clip {metrics['clip_frac']:.2f} "
                f"grad {metrics['grad_norm']:.2e} time {metrics['time/step']:.2f}s"
            )
        # Under FSDP every rank runs the eval forwards (each gathers the sharded weights with the others).
        evaluating = spec.samples.count > 0 and (step % spec.samples.every == 0 or step == total)
        if evaluating and (dist.is_main or sharding.fsdp):
            evaluate(job, step, output_dir, reporter)
            if dist.is_main:
                post_train_samples(result, batch, output_dir, reporter)
        if spec.checkpoint.every and step % spec.checkpoint.every == 0 and step < total:
            checkpoint_step(job, output_dir, step, reporter, executor.training_rank())
            dist.barrier()

    if spec.checkpoint.every and total % spec.checkpoint.every == 0:
        checkpoint_step(job, output_dir, total, reporter, executor.training_rank())
    weights = full_state(job.policy) if sharding.fsdp else None
    if dist.is_main:
        export_model(job.policy, output_dir / "model", weights)
        if reporter:
            reporter.artifact("model", "model", total, "model")
            reporter.close()
    dist.barrier()
    dist.close()


def checkpoint_step(
    job: TrainingJob, output_dir: Path, step: int, reporter: Reporter | None, training_rank: int | None
) -> None:
    """Every rank gathers under FSDP; rank 0 writes. When only another rank trains (digenrl's trainer), its
    optimizer state is sent to rank 0, whose weights are the ones that rank pushed after the step."""
    if training_rank:
        optimizer = job.dist.to_main(job.optimizer.state_dict(), training_rank)
        if not job.dist.is_main:
            return
        state = TrainingState(trainable_state(job.policy), optimizer)
    else:
        if not (job.dist.is_main or job.sharding.fsdp):
            return
        state = training_state(job.policy, job.optimizer, job.sharding.fsdp)
        if not job.dist.is_main:
            return
        state.copies = policy_copies_state(job.policy_copies())
    path = save_checkpoint(output_dir, step, state)
    if reporter:
        reporter.artifact("checkpoint", path.name, step, str(path.relative_to(output_dir)))


def step_metrics(
    result: StepResult, job: TrainingJob, dist: Distributed, seconds: float, memory: StepMemory | None = None
) -> dict[str, float]:
    metrics = dict(result.metrics)
    rewards = result.gathered_rewards
    metrics["reward/mean"] = float(rewards.mean())
    metrics["reward/std"] = float(rewards.std(unbiased=False))
    metrics["reward/group_std_mean"] = result.advantages.group_std_mean
    for name, values in result.scores.parts.items():
        metrics[f"reward/{name}"] = float(dist.all_gather(values.double()).mean())
    names = [k for k in MEAN_ACROSS_RANKS if k in metrics]
    averaged = dist.all_reduce_mean(torch.tensor([metrics[k] for k in names], dtype=torch.float64))
    metrics.update(zip(names, averaged.tolist(), strict=True))
    if "ratio/max_abs_dev" in metrics:
        metrics["ratio/max_abs_dev"] = float(dist.all_reduce_max(torch.tensor(metrics["ratio/max_abs_dev"])))
    metrics["train/zero_std_frac"] = result.advantages.zero_std_frac
    metrics["lr"] = job.optimizer.param_groups[0]["lr"]
    metrics["time/step"] = seconds
    metrics["time/reward_busy"] = job.scorer.busy_seconds  # scoring time; time/reward is the wait for it
    metrics["throughput/samples_per_s"] = len(rewards) / seconds
    if memory is not None:
        metrics.update(memory.metrics())
    metrics["sharding/fsdp"] = float(job.sharding.fsdp)
    # How busy the host was while this step ran: an experiment flags a cell timed on a loaded host.
    metrics["host/load_per_core"] = os.getloadavg()[0] / (os.cpu_count() or 1)
    return metrics


def evaluate(job: TrainingJob, step: int, output_dir: Path, reporter: Reporter | None) -> None:
    """ODE samples of the fixed eval prompts with fixed seeds, scored and saved as PNG."""
    spec = job.spec
    prompts = [p for p in job.eval_prompts for _ in range(spec.samples.count)]
    seeds = [s for _ in job.eval_prompts for s in range(spec.samples.count)]
    cond = job.conditioning(prompts)
    uncond = job.unconditional(prompts)
    images = sample_ode(job.denoiser, job.policy, cond, uncond, seeds)
    if not job.dist.is_main:
        return
    totals, _ = job.reward(images, prompts)
    folder = output_dir / "samples" / f"step-{step}"
    folder.mkdir(parents=True, exist_ok=True)
    for index, (prompt, seed) in enumerate(zip(prompts, seeds, strict=True)):
        png = to_png(images[index])
        (folder / f"{index:03d}-seed{seed}.png").write_bytes(png)
        if reporter:
            reporter.sample(step, "eval", prompt, seed, float(totals[index]), png)
    if reporter:
        reporter.print(f"eval step {step}: reward {float(totals.mean()):.4f} over {len(prompts)} samples")


def post_train_samples(result: StepResult, batch: SampleBatch, output_dir: Path, reporter: Reporter | None) -> None:
    """A few of this step's rollout images with the rewards they were trained on, kind "train";
    the seed field carries the global sample id, which names the sample's noise stream."""
    images = result.trajectory.images
    folder = output_dir / "samples" / f"step-{batch.step}" / "train"
    for row in range(min(TRAIN_SAMPLES, len(images), len(batch.prompts))):
        png = to_png(images[row])
        sample_id = int(batch.sample_ids[row])
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{row:03d}-sample{sample_id}.png").write_bytes(png)
        if reporter:
            reporter.sample(batch.step, "train", batch.prompts[row], sample_id, float(result.scores.total[row]), png)


def to_png(image: torch.Tensor) -> bytes:
    """An image [3, H, W], or a video [F, 3, H, W] as its frames side by side."""
    if image.dim() == 4:
        image = torch.cat(list(image), dim=-1)
    array = (image.detach().float().clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).cpu().numpy()
    buffer = io.BytesIO()
    Image.fromarray(array).save(buffer, format="PNG")
    return buffer.getvalue()
