"""MixGRPO's sampler step, its sliding window and GRPO-Guard's ratio, each against an fp64 re-implementation of the
released code on random tensors (≤ 1e-6 relative).

The re-implementations are written from Tencent-Hunyuan/MixGRPO ``fastvideo/utils/sampling_utils.py``
(``flow_grpo_step``, on MixGRPO's own grid ``sd3_time_shift(3, linspace(1, 0, T + 1))``) and
``fastvideo/utils/grpo_states.py`` (``GRPOTrainingStates``), and from GRPO-Guard's ratio as
X-GenGroup/Flow-Factory's ``GRPOGuardTrainer`` (``src/flow_factory/trainers/grpo.py``) computes it.
"""

from __future__ import annotations

import math

import pytest
import torch

from trainer.algorithms.mix_grpo import window_start
from trainer.loss import clipped_policy_loss
from trainer.sampling.sde_step import sde_step
from trainer.sampling.step_grid import StepGrid
from trainer.spec import AlgorithmSpec

STEPS = 25
SHAPE = (3, 4, 6, 6)
LEVEL = 0.7


def mix_grpo_sigmas(steps: int, shift: float = 3.0) -> torch.Tensor:
    t = torch.linspace(1, 0, steps + 1, dtype=torch.float64)
    return shift * t / (1 + (shift - 1) * t)


def upstream_step(v: torch.Tensor, x: torch.Tensor, sigmas: torch.Tensor, i: int, x_next: torch.Tensor):
    """MixGRPO's flow_grpo_step in fp64: (log_prob [B], prev_sample_mean, std_dev_t · √(−dt))."""
    sigma, sigma_prev, sigma_max = sigmas[i], sigmas[i + 1], sigmas[1]
    dt = sigma_prev - sigma
    std_dev_t = torch.sqrt(sigma / (1 - torch.where(sigma == 1, sigma_max, sigma))) * LEVEL
    mean = x * (1 + std_dev_t**2 / (2 * sigma) * dt) + v * (1 + std_dev_t**2 * (1 - sigma) / (2 * sigma)) * dt
    std = std_dev_t * torch.sqrt(-dt)
    log_prob = -((x_next - mean) ** 2) / (2 * std**2) - torch.log(std) - math.log(math.sqrt(2 * math.pi))
    return log_prob.mean(dim=tuple(range(1, log_prob.ndim))), mean, std


def relative(ours: torch.Tensor, reference: torch.Tensor) -> float:
    return float((ours.double() - reference).norm() / reference.norm())


@pytest.mark.parametrize("i", [0, 1, 11, 22])
def test_mix_grpo_sde_step_matches_the_released_flow_grpo_step(i: int) -> None:
    generator = torch.Generator().manual_seed(i)
    v, x, z = (torch.randn(SHAPE, generator=generator, dtype=torch.float64) for _ in range(3))
    sigmas = mix_grpo_sigmas(STEPS)
    grid = StepGrid.build(sigmas, "flow_grpo", LEVEL)
    index = torch.full((SHAPE[0],), i)
    out = sde_step(v.float(), x.float(), index, grid, noise=z.float())
    log_prob, mean, std = upstream_step(v, x, sigmas, i, out.next.double())
    assert relative(out.mean, mean) <= 1e-6 and relative(out.next, mean + std * z) <= 1e-6
    assert relative(out.log_prob, log_prob) <= 1e-6


def upstream_guard_ratio(log_prob, old_log_prob, mean, old_mean, std):
    """GRPO-Guard's ratio: exp((ℓ_θ − ℓ_old) · τ + mean((μ_θ − μ_old)²) / (2τ)), τ = √(−dt) · std_dev_t."""
    mse = (mean - old_mean).flatten(1).pow(2).mean(dim=1)
    return torch.exp((log_prob - old_log_prob) * std + mse / (2 * std))


@pytest.mark.parametrize("i", [0, 5, 20])
def test_guard_ratio_and_its_gradient_match_grpo_guard_at_the_rollout_weights(i: int) -> None:
    """At the rollout's weights μ_old is the policy's own mean: the guarded loss and its gradient in v agree."""
    generator = torch.Generator().manual_seed(100 + i)
    v, x, z = (torch.randn(SHAPE, generator=generator, dtype=torch.float64) for _ in range(3))
    advantages = torch.tensor([1.3, -0.7, 0.4], dtype=torch.float64)
    sigmas = mix_grpo_sigmas(STEPS)
    grid = StepGrid.build(sigmas, "flow_grpo_guard", LEVEL)
    index = torch.full((SHAPE[0],), i)
    rollout = sde_step(v.float(), x.float(), index, grid, noise=z.float())
    ours_v = v.float().clone().requires_grad_(True)
    out = sde_step(ours_v, x.float(), index, grid, x_next=rollout.next)
    terms = clipped_policy_loss(out.log_prob, rollout.log_prob, advantages.float(), 1e-4)
    terms.loss.backward()

    theirs_v = v.clone().requires_grad_(True)
    x_next = rollout.next.double()
    log_prob, mean, std = upstream_step(theirs_v, x, sigmas, i, x_next)
    old_log_prob, old_mean, _ = upstream_step(v, x, sigmas, i, x_next)
    ratio = upstream_guard_ratio(log_prob, old_log_prob, mean, old_mean.detach(), std)
    loss = torch.maximum(-advantages * ratio, -advantages * torch.clamp(ratio, 1 - 1e-4, 1 + 1e-4)).mean()
    loss.backward()
    assert theirs_v.grad is not None and ours_v.grad is not None
    assert relative(terms.ratio, ratio.detach()) <= 1e-6
    assert relative(ours_v.grad, theirs_v.grad) <= 1e-6


class UpstreamWindow:
    """GRPOTrainingStates as MixGRPO's script runs it: progressive, prog_overlap, roll_back, max_timesteps T − 2."""

    def __init__(self, size: int, interval: int, stride: int, steps: int) -> None:
        self.size, self.interval, self.stride, self.max = size, interval, stride, steps - 2
        self.current, self.iteration = 0, 0

    def next_window(self) -> list[int]:
        window = list(range(self.current, min(self.current + self.size, self.max)))
        self.iteration += 1
        if self.iteration >= self.interval:
            self.iteration = 0
            self.current += self.stride
        if self.current > self.max:
            self.current, self.iteration = 0, 0
        return window


@pytest.mark.parametrize(("size", "interval", "stride", "steps"), [(4, 25, 1, 25), (4, 3, 1, 10), (2, 2, 2, 12)])
def test_progressive_window_follows_upstream_while_the_window_is_whole(
    size: int, interval: int, stride: int, steps: int
) -> None:
    """Upstream keeps sliding into windows cut short at T − 2 (and an empty one) before it rolls back; ours rolls
    back to 0 instead, so every step trains w steps. Over the first pass the two agree step for step, and where
    upstream's window is first cut short ours starts again at 0."""
    spec = AlgorithmSpec(
        name="mix_grpo", sampling_steps=steps, window_size=size, window_shift_interval=interval, window_stride=stride
    )
    upstream = UpstreamWindow(size, interval, stride, steps)
    step = 1
    while len(theirs := upstream.next_window()) == size:
        assert window_start(spec, step, seed=0) == theirs[0], f"step {step}"
        step += 1
    assert step > 2 * interval and window_start(spec, step, seed=0) == 0


def test_random_window_starts_cover_upstream_s_range_and_are_whole() -> None:
    """``random``: upstream draws integers(0, max_timesteps − w + 1) each step; ours draws the same range."""
    spec = AlgorithmSpec(name="mix_grpo", sampling_steps=10, window_size=4, window_schedule="random")
    starts = {window_start(spec, step, seed=3) for step in range(1, 200)}
    assert starts == set(range(0, 10 - 2 - 4 + 1))
