"""Reweight's mandatory order, correction → sync → accumulate → clip → step: hooks on the
job's synchronisation and clipping compare what they see with native's gradient at the same
stage, on one replayed trajectory; an uncorrected (provisional) gradient fails them."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.executors.conftest import audit_spec
from trainer.audit import AuditSession
from trainer.executors.lean_reweight import LeanReweightExecutor
from trainer.spec import JobSpec, parse_spec


def flat(grads: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([g.reshape(-1) for g in grads]).double()


def reweight_spec(regime: str) -> JobSpec:
    return parse_spec(
        audit_spec(
            algorithm={"kl_beta": 0.04, "group_size": 4, "prompts_per_step": 2},
            executor={"name": "lean_reweight", "kl": "extra_vjp", "buffer_regime": regime},
        )
    )


@pytest.fixture(scope="module")
def session(sfumato_home: Path, tiny_model_dir: Path) -> AuditSession:
    return AuditSession(reweight_spec("per_sample"), ["native", "lean_reweight"])


@pytest.mark.parametrize("regime", ["per_sample", "affine"])
def test_sync_and_clip_only_see_the_corrected_gradient(session: AuditSession, regime: str) -> None:
    session.options["lean_reweight"] = reweight_spec(regime).executor
    native: dict[str, torch.Tensor] = {}

    def record(event: str, grads: list[torch.Tensor]) -> None:
        native.setdefault(event, flat(grads))

    session.capture("native", (record,))
    seen: list[str] = []

    def check(event: str, grads: list[torch.Tensor]) -> None:
        got, want = flat(grads), native[event]
        error = float((got - want).norm() / want.norm())
        if error > 1e-5:
            raise AssertionError(f"{event} saw a gradient {error:.2e} away from native's corrected one")
        seen.append(event)

    session.capture("lean_reweight", (check,))
    assert seen == ["sync", "clip"]


def test_the_run_time_order_check_refuses_pending_provisional_gradients(session: AuditSession) -> None:
    executor = LeanReweightExecutor(session.job, session.options["lean_reweight"])
    executor.pending = 1  # a sample whose P_q has not been scaled by its advantage yet
    try:
        with pytest.raises(RuntimeError, match="uncorrected provisional"):
            session.job.synchronize_gradients()
    finally:
        session.job.gradient_hooks.remove(executor.check_order)
