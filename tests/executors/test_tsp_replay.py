"""digenrl's trainer replays a unit's trained steps in batches of ``timestep_batch`` rows
(trainer/executors/tsp_replay.py): replaying every unit of a step, each with its own advantage, forms native's gradient
of the step (class E1), its clipped surrogate and its KL, whatever the batch width. One process: the units come from
the job's own rollout, the policy moved off the reference (a KL to form) and the old log-probs off the policy's (ratios
away from 1, so that the clip acts)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import torch

from tests.executors.conftest import audit_spec
from trainer.algorithms.base import StepPlan
from trainer.executors.recompute import recompute_gradients
from trainer.executors.step_report import StepReport
from trainer.executors.tsp_replay import replay_unit
from trainer.executors.units import Unit
from trainer.job import TrainingJob
from trainer.layout import SampleBatch, step_batch
from trainer.rollout import Trajectory
from trainer.spec import DigenrlOptions, parse_spec

ADVANTAGES = [1.5, -0.5, -2.0, 1.0]


@pytest.fixture(scope="module")
def job(sfumato_home: Path, tiny_model_dir: Path) -> Iterator[TrainingJob]:
    """Flow-GRPO with a KL, T = 5 (K = 4 trained steps), four samples, a clip range the moved ratios leave."""
    spec = audit_spec(algorithm={"sampling_steps": 5, "kl_beta": 0.04, "clip_range": 0.05})
    built = TrainingJob.build(parse_spec(spec), "sharded")
    yield built
    built.dist.close()


@pytest.fixture(scope="module")
def step(job: TrainingJob) -> tuple[SampleBatch, StepPlan, Trajectory]:
    algorithm = job.spec.algorithm
    batch = step_batch(job.prompts, 1, 0, algorithm.prompts_per_step, algorithm.group_size, 0, 1, job.layout)
    plan = job.plan(batch)
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for param in job.parameters:
            param.add_(0.01 * torch.randn(param.shape, generator=generator).to(param))
        trajectory = job.rollout(batch, plan)
    moved = torch.linspace(-0.3, 0.3, trajectory.log_probs.numel()).reshape(trajectory.log_probs.shape)
    trajectory.log_probs = trajectory.log_probs + moved
    return batch, plan, trajectory


def gradient(job: TrainingJob) -> torch.Tensor:
    flat = torch.cat([p.grad.reshape(-1) for p in job.parameters if p.grad is not None])
    for param in job.parameters:
        param.grad = None
    return flat


def native(job: TrainingJob, plan: StepPlan, trajectory: Trajectory) -> tuple[torch.Tensor, dict[str, float]]:
    report = StepReport()
    recompute_gradients(job, trajectory, plan, torch.tensor(ADVANTAGES), report)
    report.close_update(0.0)
    return gradient(job), report.metrics({}, {})


def replayed(
    job: TrainingJob, batch: SampleBatch, plan: StepPlan, trajectory: Trajectory, width: int | None
) -> tuple[torch.Tensor, dict[str, float], list[torch.Tensor]]:
    report, clipped = StepReport(), []
    options = DigenrlOptions(timestep_batch=width)
    for row, advantage in enumerate(ADVANTAGES):
        unit = Unit(row, 0, 0, 0.0, [], trajectory.log_probs[row], trajectory.latents[row])
        clipped += replay_unit(job, options, unit, advantage, plan, batch, len(ADVANTAGES), report)
    report.close_update(0.0)
    return gradient(job), report.metrics({}, {}), clipped


@pytest.mark.parametrize("width", [None, 3], ids=["all-steps-at-once", "batches-of-3-and-1"])
def test_replaying_every_unit_forms_native_s_gradient_and_terms(
    job: TrainingJob, step: tuple[SampleBatch, StepPlan, Trajectory], width: int | None
) -> None:
    batch, plan, trajectory = step
    want, want_metrics = native(job, plan, trajectory)
    got, metrics, clipped = replayed(job, batch, plan, trajectory, width)
    assert float(want.norm()) > 0
    assert float((got - want).norm() / want.norm()) <= 1e-5
    for key in ("loss", "kl", "clip_frac"):
        assert metrics[key] == pytest.approx(want_metrics[key], rel=1e-5, abs=1e-9), key
    assert 0 < want_metrics["clip_frac"] < 1 and want_metrics["kl"] > 0
    per_unit = [4] if width is None else [3, 1]  # K = 4 trained steps
    assert [len(mask) for mask in clipped] == per_unit * len(ADVANTAGES)
