"""algorithm.sampler: cps rolls out and trains on the coefficients-preserving step (docs/algorithms.md §2.3)."""

from __future__ import annotations

from pathlib import Path

import torch

from tests.trainer.conftest import read_metrics, tiny_spec, write_spec
from trainer.job import TrainingJob
from trainer.layout import step_batch
from trainer.spec import parse_spec


def last_step_log_probs(sampler: str) -> torch.Tensor:
    spec = parse_spec(tiny_spec(algorithm={"sampling_steps": 3, "sampler": sampler}))
    job = TrainingJob.build(spec, "sharded")
    batch = step_batch(job.prompts, 1, spec.seed, 2, 4, 0, 1, "sharded")
    with torch.no_grad():
        trajectory = job.rollout(batch, job.plan(batch))
    job.dist.close()
    return trajectory.log_probs[:, -1]


def test_a_cps_rollout_ends_on_its_deterministic_last_step(sfumato_home: Path) -> None:
    """CPS's last step has τ = σ_T sin(aπ/2) = 0, so x_T is its mean and the log-prob −(x − μ)² is 0;
    the Gaussian step's is a peaked density, far from 0."""
    assert torch.equal(last_step_log_probs("cps"), torch.zeros(8))
    assert last_step_log_probs("sde").abs().min() > 1.0


def test_cps_trains_exactly_on_policy_with_the_kl_term(tmp_path: Path, sfumato_home: Path) -> None:
    from trainer.run import run

    algorithm = {"total_steps": 1, "sampling_steps": 3, "sampler": "cps", "kl_beta": 0.04}
    spec = tiny_spec(algorithm=algorithm, samples={"count": 0}, checkpoint={"every": 0})
    run(write_spec(tmp_path / "spec.json", spec), tmp_path / "out", resume=False)
    (metrics,) = read_metrics(tmp_path / "out")
    assert metrics["ratio/max_abs_dev"] == 0.0 and metrics["kl"] == 0.0
