"""The clipped policy loss and the KL term against docs/algorithms.md §5, recomputed in plain float64 Python.

The ratios sit away from 1 on both sides of the clip range, with positive and negative advantages, at a
wide clip (0.2) and at the algorithms' own (10⁻⁴ Flow-GRPO, 10⁻⁵ Fast with CPS, 10⁻³ Flash-GRPO): an
on-policy step (ρ = 1) cannot tell max from min, these can.
"""

from __future__ import annotations

import math

import pytest
import torch

from tests.trainer.conftest import sd3_sigmas
from trainer.algorithms.registry import make_algorithm
from trainer.loss import clipped_policy_loss, reference_kl
from trainer.sampling.sde_step import sde_step
from trainer.sampling.step_grid import StepGrid
from trainer.spec import AlgorithmSpec

RATIOS = (0.5, 0.9, 1.1, 2.0)
ADVANTAGES = (1.3, -0.7)


def reference_row(ratio: float, advantage: float, clip: float) -> tuple[float, float]:
    """(loss, ∂loss/∂ℓ) of one row: max(−Aρ, −A clip(ρ, 1 ± ε)); ∂ρ/∂ℓ = ρ, and the clipped branch is flat
    outside the range. No case here ties the two branches."""
    unclipped = -advantage * ratio
    clipped = -advantage * min(max(ratio, 1 - clip), 1 + clip)
    if unclipped > clipped:
        return unclipped, -advantage * ratio
    inside = 1 - clip < ratio < 1 + clip
    return clipped, -advantage * ratio if inside else 0.0


def reference_loss(ratios: list[float], advantages: list[float], clip: float) -> tuple[float, list[float]]:
    """The batch mean of reference_row and its gradient with respect to each row's log-prob."""
    rows = [reference_row(r, a, clip) for r, a in zip(ratios, advantages, strict=True)]
    return sum(loss for loss, _ in rows) / len(rows), [grad / len(rows) for _, grad in rows]


def trainer_loss(
    ratios: list[float], advantages: list[float], clip: float, weights: list[float] | None = None
) -> tuple[float, list[float], list[bool]]:
    """trainer/loss.py on float32 log-probs whose ratios to a fixed old log-prob are ``ratios``."""
    old = torch.full((len(ratios),), -1.25)
    log_prob = (old.double() + torch.tensor(ratios, dtype=torch.float64).log()).float().requires_grad_(True)
    weight = None if weights is None else torch.tensor(weights)
    terms = clipped_policy_loss(log_prob, old, torch.tensor(advantages), clip, weight)
    terms.loss.backward()
    assert log_prob.grad is not None
    return float(terms.loss.detach()), log_prob.grad.double().tolist(), terms.clipped.tolist()


def grid() -> tuple[list[float], list[float]]:
    pairs = [(r, a) for r in RATIOS for a in ADVANTAGES]
    return [r for r, _ in pairs], [a for _, a in pairs]


def test_the_loss_at_ratios_away_from_one_is_the_clipped_surrogate_s_batch_mean() -> None:
    ratios, advantages = grid()
    want, _ = reference_loss(ratios, advantages, 0.2)
    got, _, _ = trainer_loss(ratios, advantages, 0.2)
    assert got == pytest.approx(want, rel=1e-6)


@pytest.mark.parametrize(("ratio", "advantage"), [(r, a) for r in RATIOS for a in ADVANTAGES])
def test_each_row_takes_the_pessimistic_branch_of_the_clip(ratio: float, advantage: float) -> None:
    """One row at a time: ρ = 0.5 or 2.0 leaves the range (0.8, 1.2) on either side, 0.9 and 1.1 stay inside."""
    (want, _), got = reference_row(ratio, advantage, 0.2), trainer_loss([ratio], [advantage], 0.2)[0]
    assert got == pytest.approx(want, rel=1e-6)


def test_the_gradient_is_zero_exactly_where_the_clip_holds_the_surrogate_flat() -> None:
    """A > 0 with ρ above 1 + ε, or A < 0 with ρ below 1 − ε, gets no gradient; every other row gets −Aρ/B."""
    ratios, advantages = grid()
    _, want = reference_loss(ratios, advantages, 0.2)
    _, got, _ = trainer_loss(ratios, advantages, 0.2)
    assert got == pytest.approx(want, rel=1e-6, abs=1e-12)
    assert sum(g == 0.0 for g in got) == 2  # (2.0, +1.3) and (0.5, −0.7)


def test_the_clipped_flag_marks_ratios_outside_the_range_whatever_the_advantage() -> None:
    ratios, advantages = grid()
    _, _, clipped = trainer_loss(ratios, advantages, 0.2)
    assert clipped == [abs(r - 1) > 0.2 for r in ratios]


@pytest.mark.parametrize(
    ("name", "sampler", "clip"),
    [("flow_grpo", "sde", 1e-4), ("flow_grpo_fast", "cps", 1e-5), ("flash_grpo", "sde", 1e-3)],
)
def test_the_algorithms_own_clip_ranges_clip_where_the_formula_does(name: str, sampler: str, clip: float) -> None:
    """ρ = 1 ± ε/2 (inside) and 1 ± 3ε (outside), the clip range as docs/algorithms.md §8 gives it."""
    assert AlgorithmSpec(name=name, sampler=sampler, clip_range=clip).clip_range == clip  # type: ignore[arg-type]
    ratios = [1 + k * clip for k in (-3.0, -0.5, 0.5, 3.0) for _ in ADVANTAGES]
    advantages = list(ADVANTAGES) * 4
    want, want_grad = reference_loss(ratios, advantages, clip)
    got, got_grad, clipped = trainer_loss(ratios, advantages, clip)
    assert got == pytest.approx(want, rel=1e-6)  # fp32: a few ulps; the wrong branch moves it by ~ε
    assert got_grad == pytest.approx(want_grad, rel=1e-5, abs=1e-12)
    assert clipped == [abs(r - 1) > clip for r in ratios]


def test_flash_grpo_s_positive_weights_scale_the_advantage_inside_the_max() -> None:
    ratios, advantages = grid()
    weights = [0.4 + 0.25 * n for n in range(len(ratios))]
    want, want_grad = reference_loss(ratios, [a * w for a, w in zip(advantages, weights, strict=True)], 0.2)
    got, got_grad, _ = trainer_loss(ratios, advantages, 0.2, weights)
    assert got == pytest.approx(want, rel=1e-6)
    assert got_grad == pytest.approx(want_grad, rel=1e-6, abs=1e-12)


def reference_step(
    v: float, x: float, i: int, sigmas: list[float], kind: str, level: float
) -> tuple[float, float, float]:
    """(μ, g or τ_cps — what the Flow-GRPO KL divides by, τ) of docs/algorithms.md §2.7, per element."""
    s, s1 = sigmas[i], sigmas[i + 1]
    d = s1 - s
    if kind == "cps":
        tau = s1 * math.sin(level * math.pi / 2)
        mean = (1 - s1) * (x - s * v) + math.sqrt(s1**2 - tau**2) * (x + (1 - s) * v)
        return mean, tau, tau
    g = {
        "flow_grpo": level * math.sqrt(s / (1 - (sigmas[1] if s == 1 else s))),
        "dance": level,
        "flash": sigmas[1] * s,
    }[kind]
    mean = x * (1 + g * g * d / (2 * s)) + v * d * (1 + g * g * (1 - s) / (2 * s))
    return mean, g, g * math.sqrt(-d)


KL_CASES = [
    ("flow_grpo", "sde", "flow_grpo", "flow_grpo"),
    ("flow_grpo", "sde", "exact", "flow_grpo"),
    ("flow_grpo", "cps", "flow_grpo", "cps"),
    ("flow_grpo", "cps", "exact", "cps"),
    ("dance_grpo", "sde", "flow_grpo", "dance"),
    ("flash_grpo", "sde", "exact", "flash"),
    ("flash_grpo", "sde", "flow_grpo", "flash"),
]


@pytest.mark.parametrize(("name", "sampler", "form", "kind"), KL_CASES, ids=["-".join(c[:3]) for c in KL_CASES])
def test_every_kl_form_divides_the_mean_gap_by_its_own_variance(name: str, sampler: str, form: str, kind: str) -> None:
    """KL = mean_b mean_elements (μ_θ − μ_ref)² / (2 s²): s = g for Flow-GRPO's form (τ itself under CPS, as
    its code returns it), s = τ for the exact Gaussian KL; rows at different steps, so s differs per row."""
    spec = AlgorithmSpec(name=name, sampler=sampler, kl_form=form, noise_level=0.7, sampling_steps=10)  # type: ignore[arg-type]
    sigmas = sd3_sigmas(10)
    algorithm = make_algorithm(spec, sigmas, seed=0)
    assert algorithm.sde_kind == kind
    generator = torch.Generator().manual_seed(3)
    x, v, v_ref = (torch.randn(3, 2, 2, 2, generator=generator) for _ in range(3))
    index = torch.tensor([0, 4, 7])
    grid = StepGrid.build(sigmas, algorithm.sde_kind, algorithm.level)
    policy = sde_step(v, x, index, grid, x_next=x)
    reference = sde_step(v_ref, x, index, grid, x_next=x)
    got = float(reference_kl(policy.mean, reference.mean, algorithm.kl_std(policy)))

    grid_ = sigmas.tolist()
    rows = []
    for row, i in enumerate(index.tolist()):
        gaps, divisor = [], 0.0
        for xe, ve, re in zip(*(t[row].flatten().tolist() for t in (x, v, v_ref)), strict=True):
            mean, kl_std, tau = reference_step(ve, xe, i, grid_, kind, 0.7)
            mean_ref, _, _ = reference_step(re, xe, i, grid_, kind, 0.7)
            gaps.append((mean - mean_ref) ** 2)
            divisor = kl_std if form == "flow_grpo" else tau
        rows.append(sum(gaps) / len(gaps) / (2 * divisor**2))
    assert got == pytest.approx(sum(rows) / len(rows), rel=1e-5)


def test_a_ratio_exactly_on_the_clip_boundary_is_not_counted_as_clipped() -> None:
    """|ρ − 1| = ε exactly (ρ = 1.25 and 0.75 with ε = 0.25, exact in float32) is inside, as flow_grpo's `>` has it."""
    log_prob = torch.tensor([math.log(1.25), math.log(0.75)], dtype=torch.float32)
    terms = clipped_policy_loss(log_prob, torch.zeros(2), torch.tensor([1.0, -1.0]), 0.25)
    assert terms.ratio.tolist() == [1.25, 0.75]
    assert terms.clipped.tolist() == [False, False]


def test_the_reported_ratio_is_the_detached_exp_of_the_log_prob_gap() -> None:
    ratios, advantages = grid()
    old = torch.full((len(ratios),), -1.25)
    log_prob = (old.double() + torch.tensor(ratios, dtype=torch.float64).log()).float().requires_grad_(True)
    terms = clipped_policy_loss(log_prob, old, torch.tensor(advantages), 0.2)
    assert terms.ratio.tolist() == pytest.approx(ratios, rel=1e-6)
    assert not terms.ratio.requires_grad
