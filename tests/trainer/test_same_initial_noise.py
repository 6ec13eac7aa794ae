"""``algorithm.init_same_noise``: every member of a prompt's group starts from the same x_0 (DanceGRPO's default),
while the steps' noise stays each sample's own."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.trainer.conftest import tiny_spec
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.spec import parse_spec


def rollout_latents(name: str, **algorithm: object) -> torch.Tensor:
    """[prompts, group, T + 1, *latent]: one step's rollout of 2 prompts × 4 samples."""
    spec = parse_spec(tiny_spec(algorithm={"name": name, "sampling_steps": 3, "noise_level": None, **algorithm}))
    job = TrainingJob.build(spec, "sharded")
    batch = step_batch(job.prompts, 1, spec.seed, 2, 4, 0, 1, "sharded")
    with torch.no_grad():
        latents = job.rollout(batch, job.plan(batch)).latents
    return latents.reshape(2, 4, *latents.shape[1:])


def test_dance_grpo_starts_each_group_from_one_noise_and_steps_with_each_samples_own(sfumato_home: Path) -> None:
    latents = rollout_latents("dance_grpo")
    starts, firsts = latents[:, :, 0], latents[:, :, 1]
    assert all(torch.equal(group[member], group[0]) for group in starts for member in range(4))
    assert not torch.equal(starts[0, 0], starts[1, 0])
    assert all(not torch.equal(group[member], group[0]) for group in firsts for member in range(1, 4))


@pytest.mark.parametrize(("name", "algorithm"), [("flow_grpo", {}), ("dance_grpo", {"init_same_noise": False})])
def test_without_init_same_noise_every_sample_starts_from_its_own_noise(
    sfumato_home: Path, name: str, algorithm: dict[str, object]
) -> None:
    starts = rollout_latents(name, **algorithm)[:, :, 0]
    assert all(not torch.equal(group[member], group[0]) for group in starts for member in range(1, 4))
