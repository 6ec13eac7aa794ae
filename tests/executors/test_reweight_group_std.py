"""lean_reweight with each group's own std (Flow-GRPO with ``global_std: false``, G = 4, adv_clip 1.0, a KL), on
one replayed trajectory: per_sample applies the clip to each sample's advantage and is native's gradient; affine
assumes no clip (and is native's gradient where none can bite), so where the clip bites it fails by default, logs
(keeping its unclipped gradient) or falls back to native's exact recompute; the auto regime follows Samuelson's
bound; the step reports the regime, the memory it held, the largest |A| it assumed and timings that fit inside the
step."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import torch

from tests.executors.conftest import audit_spec
from tests.executors.session_step import session_step
from trainer.audit import CLASS_BOUNDS, AuditSession
from trainer.executors.lean_reweight import AdvantageClipError, LeanReweightExecutor, group_means
from trainer.spec import LeanReweightOptions, parse_spec

GROUP, CLIP = 4, 1.0
ALGORITHM = {"global_std": False, "group_size": GROUP, "prompts_per_step": 2, "adv_clip": CLIP, "kl_beta": 0.04}


@pytest.fixture(scope="module")
def session(sfumato_home: Path, tiny_model_dir: Path) -> AuditSession:
    spec = parse_spec(audit_spec(algorithm=ALGORITHM, executor={"name": "lean_reweight", "kl": "extra_vjp"}))
    return AuditSession(spec, ["native", "lean_reweight"])


@pytest.fixture(scope="module")
def native(session: AuditSession) -> tuple[torch.Tensor, dict[str, float]]:
    captured = session.capture("native")
    return captured.gradient.double(), captured.metrics


def options(**chosen: object) -> LeanReweightOptions:
    return LeanReweightOptions(kl="extra_vjp", **chosen)


def reweight_step(session: AuditSession, chosen: LeanReweightOptions) -> tuple[torch.Tensor, dict[str, float], float]:
    """One lean_reweight step from the session's weights: (the gradient clipping sees, the metrics, wall seconds)."""
    executor = LeanReweightExecutor(session.job, chosen)
    try:
        step = session_step(session, executor)
    finally:
        session.job.gradient_hooks.remove(executor.check_order)
    return step.gradient, step.metrics, step.seconds


def group_std_advantages(session: AuditSession) -> torch.Tensor:
    rewards = session.whole.scores.total.double().reshape(-1, GROUP)
    std = rewards.std(dim=1, unbiased=False, keepdim=True) + session.spec.algorithm.advantage_eps
    return ((rewards - rewards.mean(dim=1, keepdim=True)) / std).reshape(-1)


def rel_l2(got: torch.Tensor, want: torch.Tensor) -> float:
    return float((got - want).norm() / want.norm())


def test_the_clip_bites_on_this_trajectory(session: AuditSession) -> None:
    """The premise of the affine tests below: some |A| of a group std passes adv_clip."""
    assert float(group_std_advantages(session).abs().max()) > CLIP


def test_per_sample_clips_each_advantage_and_gives_native_s_gradient_and_terms(
    session: AuditSession, native: tuple[torch.Tensor, dict[str, float]]
) -> None:
    gradient, metrics, _ = reweight_step(session, options(buffer_regime="per_sample"))
    want, native_metrics = native
    assert rel_l2(gradient, want) <= CLASS_BOUNDS["E1"]
    for key in ("loss", "kl", "clip_frac"):
        assert metrics[key] == pytest.approx(native_metrics[key], rel=1e-5, abs=1e-7), key
    assert metrics["ratio/mean"] == 1.0 and metrics["ratio/max_abs_dev"] == 0.0
    assert metrics["executor/buffer_regime"] == 2 and metrics["executor/native_fallback"] == 0.0
    assert metrics["executor/adv_abs_max_assumed"] == 0.0  # each advantage was clipped as native clips it
    assert metrics["executor/retained_graphs"] == 1 and metrics["executor/sync_count"] == 0


def test_affine_by_default_refuses_a_step_whose_clip_bites(session: AuditSession) -> None:
    with pytest.raises(AdvantageClipError, match=r"> adv_clip 1\.0"):
        reweight_step(session, options(buffer_regime="affine"))


def test_affine_falls_back_to_native_s_exact_gradient_where_the_clip_bites(
    session: AuditSession, native: tuple[torch.Tensor, dict[str, float]]
) -> None:
    gradient, metrics, _ = reweight_step(session, options(buffer_regime="affine", on_adv_clip="native_fallback"))
    assert rel_l2(gradient, native[0]) <= CLASS_BOUNDS["E1"]
    assert metrics["executor/native_fallback"] == 1.0 and metrics["executor/buffer_regime"] == 4
    largest = float(group_std_advantages(session).abs().max())
    assert metrics["executor/adv_abs_max_assumed"] == pytest.approx(largest, rel=1e-9)


def test_affine_where_the_clip_cannot_bite_forms_native_s_gradient_from_its_two_sums(
    session: AuditSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """adv_clip 5.0 (above sqrt(3), the largest |A| of 4): the affine correction divides by each group's std."""
    unclipped = parse_spec(audit_spec(algorithm={**ALGORITHM, "adv_clip": 5.0}))
    monkeypatch.setattr(session, "spec", unclipped)  # the audit's capture runs the session's spec
    monkeypatch.setattr(session.job, "spec", unclipped)
    want = session.capture("native").gradient.double()
    gradient, metrics, _ = reweight_step(session, options(buffer_regime="affine"))
    assert rel_l2(gradient, want) <= CLASS_BOUNDS["E1"]
    assert metrics["executor/native_fallback"] == 0.0
    largest = float(group_std_advantages(session).abs().max())
    assert metrics["executor/adv_abs_max_assumed"] == pytest.approx(largest, rel=1e-9)


def test_affine_logs_a_biting_clip_and_keeps_its_unclipped_gradient(
    session: AuditSession, native: tuple[torch.Tensor, dict[str, float]]
) -> None:
    gradient, metrics, _ = reweight_step(session, options(buffer_regime="affine", on_adv_clip="log"))
    assert rel_l2(gradient, native[0]) > 10 * CLASS_BOUNDS["E1"]
    assert metrics["executor/native_fallback"] == 0.0 and metrics["executor/adv_abs_max_assumed"] > CLIP


def test_per_sample_holds_a_buffer_per_sample_of_the_group_and_affine_two_sums(session: AuditSession) -> None:
    """Beside both: the corrected accumulator and the KL buffer. The difference is G - 2 gradients' bytes."""
    _, per_sample, _ = reweight_step(session, options(buffer_regime="per_sample"))
    _, affine, _ = reweight_step(session, options(buffer_regime="affine", on_adv_clip="log"))
    gradient_bytes = sum(p.numel() * p.element_size() for p in session.job.parameters)
    assert per_sample["executor/buffer_bytes"] - affine["executor/buffer_bytes"] == (GROUP - 2) * gradient_bytes
    assert affine["executor/buffer_bytes"] >= 3 * gradient_bytes  # S0, S1 and the accumulator at least


def test_the_step_s_timings_are_non_negative_and_fit_inside_the_step(session: AuditSession) -> None:
    _, metrics, seconds = reweight_step(session, options(buffer_regime="per_sample"))
    phases = [metrics[f"time/{phase}"] for phase in ("rollout", "reward", "train", "sync")]
    assert all(value >= 0 for value in phases) and sum(phases) <= seconds


def test_the_step_s_train_time_holds_every_provisional_backward(session: AuditSession) -> None:
    """time/train sums the provisional backwards (inside the rollout), the corrections and the update; each
    backward timed here lies inside one of its intervals."""
    executor = LeanReweightExecutor(session.job, options(buffer_regime="per_sample"))
    backward, timed = executor.provisional_backward, [0.0]

    def timed_backward(*args: Any) -> None:
        began = time.perf_counter()
        backward(*args)
        timed[0] += time.perf_counter() - began

    executor.provisional_backward = timed_backward  # type: ignore[method-assign]
    try:
        metrics = session_step(session, executor).metrics
    finally:
        session.job.gradient_hooks.remove(executor.check_order)
    assert timed[0] > 0 and metrics["time/train"] >= timed[0]


def test_the_step_s_result_carries_every_sample_s_reward_in_row_order(session: AuditSession) -> None:
    """The rewards the trainer logs as reward/mean and reward/std (trainer/run.py's step_metrics)."""
    executor = LeanReweightExecutor(session.job, options(buffer_regime="per_sample"))
    session.restore()
    try:
        result = executor.train_step(session.batch)
    finally:
        session.job.gradient_hooks.remove(executor.check_order)
    assert torch.equal(result.gathered_rewards.double(), session.whole.scores.total.double())


@pytest.mark.parametrize(
    ("algorithm", "regime"),
    [
        ({}, "per_sample"),  # biased std: the largest |A| of 4 is sqrt(3) > 1.0
        ({"adv_clip": 1.8}, "affine"),
        ({"adv_clip": 1.6, "unbiased_std": True}, "affine"),  # unbiased: (G - 1)/sqrt(G) = 1.5
        ({"adv_clip": 1.6}, "per_sample"),
        ({"global_std": True}, "affine"),  # the clip is checked at run time instead
    ],
    ids=["biased-bites", "biased-fits", "unbiased-fits", "biased-between", "global-std"],
)
def test_the_auto_regime_holds_per_sample_buffers_only_where_a_group_std_clip_can_bite(
    session: AuditSession, monkeypatch: pytest.MonkeyPatch, algorithm: dict[str, object], regime: str
) -> None:
    spec = parse_spec(audit_spec(algorithm={**ALGORITHM, **algorithm}))
    monkeypatch.setattr(session.job, "spec", spec)
    executor = LeanReweightExecutor(session.job, options())
    session.job.gradient_hooks.remove(executor.check_order)
    assert executor.regime(GROUP) == regime
    assert executor.regime(1) == "per_rank"  # one sample of the group on this rank: .grad is its P
    chosen = LeanReweightExecutor(session.job, options(buffer_regime="affine"))
    session.job.gradient_hooks.remove(chosen.check_order)
    assert chosen.regime(1) == "affine"  # a chosen regime is kept


def test_group_means_gives_each_row_the_mean_of_its_group() -> None:
    rewards = torch.tensor([1.0, 3.0, 10.0, 2.0, 20.0], dtype=torch.float64)
    groups = torch.tensor([4, 4, 7, 4, 7])
    assert torch.equal(group_means(rewards, groups), torch.tensor([2.0, 2.0, 15.0, 2.0, 15.0], dtype=torch.float64))
