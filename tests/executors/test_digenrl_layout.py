"""digenrl's pieces that one process can hold to their definition (trainer/executors/digenrl.py): which ranks
generate and which train, which prompt groups each pool takes, a group's generated units, and the step result each
rank returns. Its whole step needs a generator and a trainer rank (tests/executors/test_digenrl_two_trainers.py, the
two-rank audit); here the job's process record names a rank of a larger world, and no collective is called."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch

from tests.executors.conftest import audit_spec
from trainer.advantages import group_advantages
from trainer.executors.digenrl import DigenrlExecutor
from trainer.job import Replay, Scores, TrainingJob
from trainer.spec import DigenrlOptions, parse_spec


@pytest.fixture(scope="module")
def job(sfumato_home: Path, tiny_model_dir: Path) -> Iterator[TrainingJob]:
    """Three prompt groups of two, T = 4 (K = 3), CFG, two rewards (so a unit carries two parts), the std over the
    whole step (n - 1) and a clip that bites."""
    algorithm = {"prompts_per_step": 3, "group_size": 2, "global_std": True, "unbiased_std": True, "adv_clip": 1.2}
    algorithm |= {"cfg_scale": 3.0}
    spec = audit_spec(algorithm=algorithm)
    spec["reward"] = [{"name": "brightness", "weight": 1.0}, {"name": "colorfulness", "weight": 0.5}]
    built = TrainingJob.build(parse_spec(spec), "sharded")
    yield built
    built.dist.close()


@contextmanager
def as_rank(job: TrainingJob, rank: int, world: int) -> Iterator[None]:
    """The job's process record as rank ``rank`` of ``world`` (no process group: one process)."""
    job.dist = dataclasses.replace(job.dist, rank=rank, world_size=world)
    try:
        yield
    finally:
        job.dist = dataclasses.replace(job.dist, rank=0, world_size=1)


def on_rank(job: TrainingJob, rank: int, world: int, **options: object) -> DigenrlExecutor:
    with as_rank(job, rank, world):
        return DigenrlExecutor(job, DigenrlOptions(**options))  # type: ignore[arg-type]


def test_the_rollout_pool_is_the_first_ranks_and_the_trainer_pool_the_rest(job: TrainingJob) -> None:
    generator = on_rank(job, 1, 5, rollout_devices=2)
    trainer = on_rank(job, 2, 5, rollout_devices=2)
    assert generator.generators == [0, 1] and generator.trainers == [2, 3, 4]
    assert generator.is_generator and not trainer.is_generator
    assert trainer.training_rank() == 2


def test_trainer_assistance_takes_the_last_group_of_each_trainer_that_owns_several(job: TrainingJob) -> None:
    """Three groups over two trainers: trainer 1 owns groups 0 and 2 and generates 2 itself; trainer 2 owns 1 alone."""
    assisted = on_rank(job, 0, 3, trainer_assisted=True)
    assert assisted.tag_groups() == {2}
    assert on_rank(job, 0, 3).tag_groups() == set()
    assert on_rank(job, 0, 4, trainer_assisted=True).tag_groups() == set()  # three trainers: a group each


def test_a_generator_takes_the_groups_of_its_rank_modulo_the_rollout_pool_less_the_assisted_ones(
    job: TrainingJob,
) -> None:
    digenrl = on_rank(job, 0, 4, rollout_devices=2)
    assert digenrl.generator_groups(0, set()) == [0, 2]
    assert digenrl.generator_groups(1, set()) == [1]
    assert digenrl.generator_groups(0, {2}) == [0]


def test_only_a_stale_unit_makes_the_estimator_approximate(job: TrainingJob) -> None:
    _, plan = on_rank(job, 0, 2).global_batch(1)
    assert on_rank(job, 0, 2, max_staleness=1).exactness(plan) == "A"
    assert on_rank(job, 0, 2).exactness(plan) == "E1"


def test_one_trainer_gathers_its_own_rewards_without_a_collective(job: TrainingJob) -> None:
    values = torch.tensor([0.5, -1.0], dtype=torch.float64)
    assert on_rank(job, 1, 2).trainer_all_gather(values) is values


def test_a_generated_group_is_one_unit_per_member_with_its_rows_rewards_and_the_weights_version(
    job: TrainingJob,
) -> None:
    digenrl = on_rank(job, 0, 2)
    digenrl.version = 3
    batch, plan = digenrl.global_batch(1)
    units = digenrl.generate(batch, plan, 1)
    rows = (batch.group_ids == 1).nonzero().reshape(-1).tolist()
    assert [u.sample_id for u in units] == [int(batch.sample_ids[r]) for r in rows]
    assert {u.group_id for u in units} == {1} and {u.version for u in units} == {3}
    for unit in units:
        assert unit.latents.shape == (job.algorithm.steps + 1, *job.family.latent_shape)
        assert unit.log_probs.shape == (job.algorithm.steps,)
    images = job.family.decode(torch.stack([u.latents[-1] for u in units]).to(job.dist.device))
    total, parts = job.reward(images, [batch.prompts[r] for r in rows])
    assert [u.reward for u in units] == pytest.approx(total.double().tolist(), abs=1e-5)
    sent = torch.tensor([u.parts for u in units], dtype=torch.float64)
    assert torch.allclose(sent, torch.stack([parts["brightness"], parts["colorfulness"]], dim=1).double(), atol=1e-5)
    with torch.no_grad():
        whole = job.rollout(batch, plan)  # the job's own rollout: each sample's noise, the CFG branch
    assert torch.allclose(torch.stack([u.latents for u in units]), whole.latents[rows].cpu(), atol=1e-5)


def test_in_replay_mode_a_group_s_units_are_its_rows_of_the_stored_trajectory_and_scores(job: TrainingJob) -> None:
    digenrl = on_rank(job, 0, 2)
    batch, plan = digenrl.global_batch(1)
    n, steps, shape = len(batch.prompts), job.algorithm.steps, torch.Size(job.family.latent_shape)
    latents = torch.arange(n * (steps + 1) * shape.numel(), dtype=torch.float32).reshape(n, steps + 1, *shape)
    log_probs = torch.arange(n * steps, dtype=torch.float32).reshape(n, steps) / 10
    total = torch.arange(n, dtype=torch.float32)
    parts = {"brightness": total + 10, "colorfulness": total + 20}
    trajectory = dataclasses.replace(job.rollout(batch, plan), latents=latents, log_probs=log_probs)
    job.replay = Replay(trajectory, Scores(total, parts))
    try:
        units = digenrl.generate(batch, plan, 2)
    finally:
        job.replay = None
    rows = (batch.group_ids == 2).nonzero().reshape(-1).tolist()
    assert [u.reward for u in units] == [float(r) for r in rows]
    assert [u.parts for u in units] == [[r + 10.0, r + 20.0] for r in rows]
    for unit, row in zip(units, rows, strict=True):
        assert torch.equal(unit.latents, latents[row]) and torch.equal(unit.log_probs, log_probs[row])


def test_each_rank_returns_its_equal_slice_of_the_step_s_rewards_and_the_whole_step_s_advantages(
    job: TrainingJob,
) -> None:
    """Six samples over three ranks: rank 1 holds samples 2 and 3; the advantages are every group's."""
    totals, brightness = (0, 3, 1, 7, 2, 2), (5, 1, 4, 0, 2, 9)  # a part that orders the samples otherwise
    rewards = torch.tensor([[t, b, 20.0 + t] for t, b in zip(totals, brightness, strict=True)], dtype=torch.float64)
    digenrl = on_rank(job, 1, 3)
    with as_rank(job, 1, 3):
        result = digenrl.result({"loss": 0.25}, rewards)
    assert result.metrics == {"loss": 0.25}
    assert result.scores.total.tolist() == [1.0, 7.0]
    assert result.scores.parts["brightness"].tolist() == [4.0, 0.0]
    assert result.scores.parts["colorfulness"].tolist() == [21.0, 27.0]
    assert result.gathered_rewards.tolist() == [0.0, 3.0, 1.0, 7.0, 2.0, 2.0]
    spec = job.spec.algorithm
    want = group_advantages(
        rewards[:, 0],
        torch.tensor([0, 0, 1, 1, 2, 2]),
        global_std=bool(spec.global_std),
        clip=spec.adv_clip,
        eps=spec.advantage_eps,
        unbiased=bool(spec.unbiased_std),
    )
    assert torch.equal(result.advantages.values, want.values) and float(want.values.max()) == pytest.approx(1.2)
