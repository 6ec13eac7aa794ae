"""The Lean executors' hybrid schedule (executor.after_first_update: native): with several optimizer steps
per rollout their graphs give the first update and native's re-forwards the rest, so the step is native's."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec
from tests.executors.session_step import session_step
from tests.trainer.conftest import read_metrics, write_spec
from trainer.audit import CLASS_BOUNDS, AuditSession
from trainer.executors.lean_reweight import LeanReweightExecutor
from trainer.run import run
from trainer.spec import LeanReweightOptions, parse_spec

ALGORITHM = {"inner_epochs": 2, "total_steps": 2}


def train(tmp_path: Path, executor: dict[str, Any]) -> tuple[list[dict[str, float]], Path]:
    out = tmp_path / executor["name"]
    run(
        write_spec(tmp_path / f"{executor['name']}.json", audit_spec(algorithm=ALGORITHM, executor=executor)),
        out,
        False,
    )
    return read_metrics(out), out


def test_hybrid_lean_retain_takes_the_same_two_updates_a_step_as_native(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    from diffusers import SD3Transformer2DModel

    native, native_out = train(tmp_path, {"name": "native"})
    hybrid, hybrid_out = train(tmp_path, {"name": "lean_retain", "after_first_update": "native"})

    assert all(m["ratio/max_abs_dev"] > 0 for m in hybrid)  # the second update saw moved weights
    for key in ("loss", "grad_norm", "clip_frac", "reward/mean"):
        assert [m[key] for m in hybrid] == [m[key] for m in native], key
    native_model = SD3Transformer2DModel.from_pretrained(native_out / "model").state_dict()
    hybrid_model = SD3Transformer2DModel.from_pretrained(hybrid_out / "model").state_dict()
    for name, weight in native_model.items():
        assert torch.equal(hybrid_model[name], weight), name


HYBRID = {"after_first_update": "native"}


@pytest.fixture(scope="module")
def session(sfumato_home: Path, tiny_model_dir: Path) -> AuditSession:
    """One replayed step, two updates, with a KL (so the audit moves the weights off the reference)."""
    algorithm = {**ALGORITHM, "kl_beta": 0.04}
    reweight = {"name": "lean_reweight", "kl": "extra_vjp", **HYBRID}  # lean_retain shares after_first_update
    spec = parse_spec(audit_spec(algorithm=algorithm, executor=reweight))
    session = AuditSession(spec, ["native", "lean_reweight", "lean_retain"])
    return session


def test_hybrid_lean_reweight_takes_native_s_two_updates_within_its_class_bound(session: AuditSession) -> None:
    """Reweight's first update is native's up to rounding (E1), the second is native's re-forward; both
    gradients, before clipping, stay within the E1 bound. Weights are not compared: AdamW's first steps
    are about lr·sign(g), so rounding in a near-zero gradient component moves a weight by up to 2·lr."""
    native, hybrid = update_gradients(session, "native"), update_gradients(session, "lean_reweight")

    assert len(native) == len(hybrid) == ALGORITHM["inner_epochs"]
    for want, got in zip(native, hybrid, strict=True):
        assert float((got - want).norm() / want.norm()) <= CLASS_BOUNDS["E1"]


@pytest.mark.parametrize("name", ["lean_retain", "lean_reweight"])
def test_hybrid_executors_report_native_s_loss_clip_fraction_and_kl_within_their_class(
    session: AuditSession, name: str
) -> None:
    """One report per update: the first update's terms (ratio 1, nothing clipped) count as one update, not
    one trained step, so the step's figures are native's."""
    native = session.capture("native")
    candidate = session.capture(name)

    assert native.metrics["clip_frac"] > 0 and native.metrics["kl"] > 0  # the second update clips; KL moved
    bound = CLASS_BOUNDS[candidate.exactness]
    for key, want in native.metrics.items():
        assert abs(candidate.metrics[key] - want) <= bound * max(1.0, abs(want)), key


def update_gradients(session: AuditSession, name: str) -> list[torch.Tensor]:
    """The gradient each optimizer update of one step clips, flattened."""
    seen: list[torch.Tensor] = []

    def keep(event: str, grads: list[torch.Tensor]) -> None:
        if event == "clip":
            seen.append(torch.cat([g.reshape(-1) for g in grads]).double())

    session.capture(name, (keep,))
    return seen


# Each synchronisation is made to last this long, so that one left out of time/sync (or taken off it) shows.
SYNC_PADDING = 0.01


def test_hybrid_lean_reweight_s_sync_time_holds_every_update_s_synchronisation(
    session: AuditSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    job, synchronize, timed = session.job, session.job.synchronize_gradients, []

    def padded_synchronize() -> None:
        began = time.perf_counter()
        synchronize()
        time.sleep(SYNC_PADDING)
        timed.append(time.perf_counter() - began)

    monkeypatch.setattr(job, "synchronize_gradients", padded_synchronize)
    executor = LeanReweightExecutor(job, LeanReweightOptions(kl="extra_vjp", **HYBRID))
    try:
        metrics = session_step(session, executor).metrics
    finally:
        job.gradient_hooks.remove(executor.check_order)
    assert len(timed) == ALGORITHM["inner_epochs"]
    assert metrics["time/sync"] >= sum(timed)
