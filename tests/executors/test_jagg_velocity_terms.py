"""JAGG's per-step loss as a function of the velocity (trainer/executors/jagg_groups.py, `velocity_terms`) is native's
per-step loss (`TrainingJob.trained_step`) at the same velocity: the clipped surrogate with the plan's per-row weights
plus β·KL against the reference. The audits compare the composed executors with jagg, which shares this function, so
they cannot see it drop the weights or the KL; this test holds it to native."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from tests.executors.conftest import audit_spec
from trainer.audit import AuditSession
from trainer.executors.jagg_groups import velocity_terms
from trainer.sampling.sde_step import sde_step
from trainer.spec import parse_spec


@pytest.fixture(scope="module")
def session(sfumato_home: Path, tiny_model_dir: Path) -> AuditSession:
    """Flow-GRPO with a KL, the weights moved off the reference so that the KL is not 0."""
    return AuditSession(parse_spec(audit_spec(algorithm={"kl_beta": 0.04})), ["native"])


def test_velocity_terms_are_native_s_weighted_loss_and_kl_at_the_same_velocity(session: AuditSession) -> None:
    job, trajectory = session.job, session.whole.trajectory
    rows = trajectory.latents.shape[0]
    plan = dataclasses.replace(job.plan(session.batch), weights=torch.linspace(0.5, 2.0, rows))
    advantages = torch.linspace(-1.5, 1.5, rows)
    grid = job.denoiser.grid
    row_index = torch.arange(rows)
    index = plan.trained[:, 0]
    x, x_next = trajectory.latents[row_index, index], trajectory.latents[row_index, index + 1]
    old = trajectory.log_probs[row_index, index]
    with torch.no_grad():
        native = job.trained_step(trajectory, plan, 0, advantages)
        velocity = job.velocity(job.policy, x, index, trajectory.cond, trajectory.uncond)
        reference = sde_step(job.reference_velocity(x, index, trajectory), x, index, grid, x_next).mean
        routed = velocity_terms(job, velocity, x, x_next, index, old, advantages, plan, reference)
    assert float(native.kl) > 0  # the premise: the KL term is there to lose (it is small: no absolute tolerance)
    torch.testing.assert_close(routed.kl, native.kl, rtol=1e-5, atol=0.0)
    torch.testing.assert_close(routed.loss, native.loss)
