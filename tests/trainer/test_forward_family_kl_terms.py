"""The job adds the KL terms to a forward algorithm's loss as the released trainers do: AWM's trained-time loss is
its clipped loss + kl_beta · KL(v_θ, v_ref) + ema_kl_beta · KL(v_θ, v_ema), with the policy moved off its
reference and the EMA moved off the policy, so that each term counts."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.trainer.conftest import tiny_spec
from trainer.algorithms.forward import ForwardAlgorithm, ForwardInputs, Renoised, velocity_kl
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.spec import parse_spec


@pytest.fixture()
def awm_job(sfumato_home: Path, tiny_model_dir: Path) -> Iterator[TrainingJob]:
    spec = tiny_spec(algorithm={"name": "awm", "sampling_steps": 4, "kl_beta": 0.5, "ema_kl_beta": 2.0})
    for grpo_option in ("noise_level", "clip_range"):
        del spec["algorithm"][grpo_option]
    job = TrainingJob.build(parse_spec(spec), "sharded")
    yield job
    job.dist.close()


def moved(weights: list[torch.Tensor], seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for w in weights:
            w.add_(0.05 * torch.randn(w.shape, generator=g).to(w))


def test_awms_trained_time_loss_is_its_clipped_loss_plus_both_weighted_kls(awm_job: TrainingJob) -> None:
    job, algo = awm_job, awm_job.spec.algorithm
    assert job.ema_policy is not None and job.old_policy is not None and isinstance(job.algorithm, ForwardAlgorithm)
    moved(job.parameters, 0)
    moved(job.ema_policy.weights, 1)
    job.old_policy.restart(job.parameters)
    batch = step_batch(job.prompts, 1, 0, algo.prompts_per_step, algo.group_size, 0, 1, job.layout)
    plan = job.plan(batch)
    with torch.no_grad():
        trajectory = job.rollout(batch, plan)
        advantages, _, _ = job.advantages(job.score(trajectory, batch), batch)
        terms = job.forward_step(trajectory, plan, 0, advantages)

        sigma = job.denoiser.grid.sigma(plan.trained[:, 0])
        renoised = Renoised.draw(trajectory.latents[:, -1], sigma, plan.noise_seeds[:, 0])  # type: ignore[index]
        x, cond = renoised.noised, trajectory.cond

        def velocity_of(weights: list[torch.Tensor] | None) -> torch.Tensor:
            if weights is None:
                return job.family.velocity(job.policy, x, renoised.sigma, cond, None, 1.0)
            keep = [p.detach().clone() for p in job.parameters]
            for p, w in zip(job.parameters, weights, strict=True):
                p.copy_(w)
            try:
                return job.family.velocity(job.policy, x, renoised.sigma, cond, None, 1.0)
            finally:
                for p, k in zip(job.parameters, keep, strict=True):
                    p.copy_(k)

        velocity, old, ema = velocity_of(None), velocity_of(job.old_policy.weights), velocity_of(job.ema_policy.weights)
        reference = job.conditional_reference_velocity(x, renoised.sigma, cond)
        inputs = ForwardInputs(velocity, old, reference, renoised, advantages, plan.noise_seeds[:, 0], job.dist)  # type: ignore[index]
        kl, ema_kl = velocity_kl(velocity, reference), velocity_kl(velocity, ema)
        expected = job.algorithm.loss(inputs).loss + 0.5 * kl + 2.0 * ema_kl
    assert float(kl) > 0 and float(ema_kl) > 0
    assert float(terms.kl) == pytest.approx(float(kl), rel=1e-6)
    assert float(terms.loss) == pytest.approx(float(expected), rel=1e-6)
