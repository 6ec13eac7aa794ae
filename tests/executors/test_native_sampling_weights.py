"""native's rollout samples with the weights the algorithm names for the step (trainer/executors/native.py, through
TrainingJob.sampling_weights): DGPO's old policy once the optimizer steps done before the step exceed
``switch_ema_ref`` (Luo-Yihong/DGPO train_dgpo.py, ``global_step > switch_ema_ref``), its own weights before. With
switch_ema_ref 0 and one update a step, step 1 samples with the policy and step 2 with the old policy."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.trainer.conftest import tiny_spec
from trainer.executors.native import NativeExecutor
from trainer.job import TrainingJob
from trainer.layout import SampleBatch, step_batch
from trainer.spec import NativeOptions, parse_spec


@pytest.fixture(scope="module")
def job(sfumato_home: Path, tiny_model_dir: Path) -> Iterator[TrainingJob]:
    spec = tiny_spec(algorithm={"name": "dgpo", "sampling_steps": 4, "switch_ema_ref": 0, "inner_epochs": 1})
    for grpo_option in ("noise_level", "clip_range"):
        del spec["algorithm"][grpo_option]
    job = TrainingJob.build(parse_spec(spec), "sharded")
    yield job
    job.dist.close()


def batch_of(job: TrainingJob, step: int) -> SampleBatch:
    algorithm = job.spec.algorithm
    return step_batch(job.prompts, step, 0, algorithm.prompts_per_step, algorithm.group_size, 0, 1, job.layout)


def rollouts_with_either_weights(job: TrainingJob, batch: SampleBatch) -> tuple[torch.Tensor, torch.Tensor]:
    """The step's latents rolled out with the policy and with an old policy moved off it (they differ)."""
    assert job.old_policy is not None
    generator = torch.Generator().manual_seed(batch.step)
    with torch.no_grad():
        for weight in job.old_policy.weights:
            weight.add_(0.05 * torch.randn(weight.shape, generator=generator).to(weight))
        own = job.rollout(batch, job.plan(batch)).latents
        with job.old_policy.swapped_in(job.parameters):
            old = job.rollout(batch, job.plan(batch)).latents
    assert not torch.equal(own, old)
    return own, old


def native_latents(job: TrainingJob, batch: SampleBatch) -> torch.Tensor:
    return NativeExecutor(job, NativeOptions()).train_step(batch).trajectory.latents


def test_native_samples_a_dgpo_step_before_switch_ema_ref_with_the_policy_s_own_weights(job: TrainingJob) -> None:
    batch = batch_of(job, 1)
    own, _ = rollouts_with_either_weights(job, batch)
    assert torch.equal(native_latents(job, batch), own)


def test_native_samples_a_dgpo_step_past_switch_ema_ref_with_the_old_policy(job: TrainingJob) -> None:
    batch = batch_of(job, 2)
    _, old = rollouts_with_either_weights(job, batch)
    assert torch.equal(native_latents(job, batch), old)
