"""Without a replay, the Lean executors' rollout (trainer/executors/graph_rollout.py) is the job's own rollout
(trainer/job.py TrainingJob.rollout), operation for operation: the same latents, old log-probs and images, whether
every row trains at the same steps (Flow-GRPO, here with a KL and CFG: one forward a step), rows train at their own
steps (DanceGRPO: the training rows forwarded apart from the others) or MixGRPO-Flash's solver finishes the steps
after the window. Each trained (row, step) is handed over once, with its graph unless ``graphs`` leaves it out, and
with the reference's mean where the spec has a KL; no other row is forwarded with grad. In replay mode
(docs/executors.md §4) it is the stored trajectory, its forwards taken toward the stored latents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec
from trainer.executors.graph_rollout import TrainedForward, rollout_with_graphs
from trainer.job import Replay, TrainingJob
from trainer.layout import SampleBatch, step_batch
from trainer.models.base import Conditioning
from trainer.rollout import Trajectory
from trainer.spec import parse_spec

ALGORITHMS = {
    "flow_grpo+kl+cfg": {"kl_beta": 0.04, "cfg_scale": 4.5},
    "dance_grpo": {"name": "dance_grpo", "train_timesteps": 2, "global_std": False, "group_size": 4},
    "mix_grpo_flash": {"name": "mix_grpo_flash", "sampling_steps": 6, "window_size": 2, "ode_compression": 0.6},
}


@pytest.fixture(scope="module", params=list(ALGORITHMS), ids=list(ALGORITHMS))
def job(request: pytest.FixtureRequest, sfumato_home: Path, tiny_model_dir: Path) -> Iterator[TrainingJob]:
    algorithm: dict[str, Any] = {"prompts_per_step": 1, "group_size": 2, **ALGORITHMS[request.param]}
    job = TrainingJob.build(parse_spec(audit_spec(algorithm=algorithm)), "shared")
    yield job
    job.dist.close()


def batch_of(job: TrainingJob, step: int = 1) -> SampleBatch:
    algorithm = job.spec.algorithm
    return step_batch(job.prompts, step, 0, algorithm.prompts_per_step, algorithm.group_size, 0, 1, job.layout)


def with_graphs(job: TrainingJob, graphs: torch.Tensor | None = None) -> tuple[Trajectory, list[TrainedForward]]:
    batch = batch_of(job)
    handed: list[TrainedForward] = []
    rows = list(range(len(batch.prompts)))
    return rollout_with_graphs(job, batch, job.plan(batch), rows, handed.append, graphs), handed


def same_conditioning(a: Conditioning | None, b: Conditioning | None) -> bool:
    if a is None or b is None:
        return a is b
    pairs = zip(a.tensors(), b.tensors(), strict=True)
    return all(x is y or (x is not None and y is not None and torch.equal(x, y)) for x, y in pairs)


def test_the_rollout_with_graphs_is_the_job_s_rollout(job: TrainingJob) -> None:
    """Bit for bit where every row trains at the same steps (the rollout's own batch shapes); where rows are
    forwarded apart, within float32 rounding (a forward of fewer rows sums in another order)."""
    batch = batch_of(job)
    plan = job.plan(batch)
    with torch.no_grad():
        expected = job.rollout(batch, plan)
    got, _ = with_graphs(job)
    tolerance = 0.0 if bool((plan.trained == plan.trained[:1]).all()) else 1e-6
    for name in ("latents", "log_probs", "images"):
        torch.testing.assert_close(
            getattr(got, name), getattr(expected, name), rtol=0, atol=tolerance, equal_nan=True, msg=name
        )
    assert same_conditioning(got.cond, expected.cond) and same_conditioning(got.uncond, expected.uncond)


def test_each_trained_row_and_step_is_handed_over_once_with_its_graph(job: TrainingJob) -> None:
    trajectory, handed = with_graphs(job)
    plan = job.plan(batch_of(job))
    pairs = sorted((forward.step, row) for forward in handed for row in forward.rows)
    assert pairs == sorted((int(s), r) for r in range(plan.trained.shape[0]) for s in plan.trained[r].tolist())
    for forward in handed:
        assert forward.kept and forward.out.log_prob.requires_grad
        assert not forward.x.requires_grad  # the next latent is detached: graphs never chain across steps
        assert torch.equal(forward.out.log_prob.detach(), trajectory.log_probs[forward.rows, forward.step])
        assert torch.equal(forward.x, trajectory.latents[forward.rows, forward.step])


def test_a_trained_pair_left_out_of_graphs_is_handed_over_without_one(job: TrainingJob) -> None:
    plan = job.plan(batch_of(job))
    graphs = torch.zeros((plan.trained.shape[0], job.spec.algorithm.sampling_steps), dtype=torch.bool)
    first = int(plan.trained[0, 0])
    graphs[0, first] = True
    _, handed = with_graphs(job, graphs)
    _, every = with_graphs(job)
    pairs = sorted((forward.step, row, forward.kept) for forward in handed for row in forward.rows)
    assert pairs == sorted(
        (forward.step, row, (forward.step, row) == (first, 0)) for forward in every for row in forward.rows
    )
    assert all(not forward.out.log_prob.requires_grad for forward in handed if not forward.kept)


def test_the_reference_mean_is_taken_exactly_where_the_spec_has_a_kl(job: TrainingJob) -> None:
    _, handed = with_graphs(job)
    has_kl = job.spec.algorithm.kl_beta > 0
    assert all((forward.reference_mean is not None) == has_kl for forward in handed)
    if has_kl:  # the reference's weights differ from the policy's only after an update: equal means here
        assert all(torch.equal(forward.reference_mean, forward.out.mean.detach()) for forward in handed)  # type: ignore[arg-type]


def test_a_replay_is_the_stored_trajectory_with_each_forward_taken_from_its_latents(job: TrainingJob) -> None:
    """The stored trajectory is another step's rollout, so its x_0 is not the noise this step would draw; the
    conditioning is this step's prompts', as the step's own rollout has it."""
    batch, other = batch_of(job), batch_of(job, 2)
    with torch.no_grad():
        own = job.rollout(batch, job.plan(batch))
        stored = job.rollout(other, job.plan(other))
    job.replay = Replay(stored, job.score(stored, other))
    try:
        got, handed = with_graphs(job)
    finally:
        job.replay = None
    for name in ("latents", "log_probs", "images"):
        torch.testing.assert_close(getattr(got, name), getattr(stored, name), rtol=0, atol=0, equal_nan=True, msg=name)
    assert all(torch.equal(forward.x, stored.latents[forward.rows, forward.step]) for forward in handed)
    assert same_conditioning(got.cond, own.cond) and same_conditioning(got.uncond, own.uncond)


def test_only_the_rows_that_train_at_a_step_are_forwarded_with_grad(job: TrainingJob) -> None:
    """The other rows' forwards build no graph: they are never backwarded (native re-forwards only trained rows)."""
    rows: list[int] = []

    def count(module: torch.nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        if torch.is_grad_enabled():
            rows.append((args[0] if args else kwargs["hidden_states"]).shape[0])

    handle = job.policy.register_forward_pre_hook(count, with_kwargs=True)
    try:
        with_graphs(job)
    finally:
        handle.remove()
    branches = 2 if job.spec.algorithm.cfg_scale > 1 else 1  # CFG forwards each row with and without its prompt
    assert sum(rows) == job.plan(batch_of(job)).trained.numel() * branches
