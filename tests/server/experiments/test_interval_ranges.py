"""Intervals inside what is possible: a positive figure's interval never reaches zero, a reward's never leaves
the range it declares, on random inputs; each method against a reference written out here (no SciPy in the
venv): the t quantile of 2 degrees of freedom in closed form, (2p - 1) / sqrt(2 p (1 - p))."""

from __future__ import annotations

import math
import random

import pytest

from server.schemas.compare import CompareRow
from server.services.experiment_summary import CellFigures, summarize
from server.services.statistics import bounded_interval, log_interval
from trainer.spec.reward_ranges import weighted_reward_range

T_975_DF2 = (2 * 0.975 - 1) / math.sqrt(2 * 0.975 * 0.025)  # 4.302653


def _reference_t_interval(values: list[float]) -> tuple[float, float, float]:
    """mean ± t(0.975; 2)·s/√3 for three values, written out."""
    mean = sum(values) / 3
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / 2)
    return mean, mean - T_975_DF2 * sd / math.sqrt(3), mean + T_975_DF2 * sd / math.sqrt(3)


@pytest.mark.parametrize("seed", range(200))
def test_a_positive_figure_s_interval_never_reaches_zero(seed: int) -> None:
    generator = random.Random(seed)
    values = [generator.uniform(0.01, 200.0) for _ in range(generator.randint(2, 5))]
    result = log_interval(values)
    assert result.low is not None and result.high is not None
    assert 0 < result.low <= result.mean <= result.high  # type: ignore[operator]


@pytest.mark.parametrize("seed", range(200))
def test_a_reward_interval_never_leaves_its_declared_range(seed: int) -> None:
    generator = random.Random(seed)
    values = [generator.choice([0.0, 1.0, generator.random()]) for _ in range(generator.randint(2, 5))]
    result = bounded_interval(values, 0.0, 1.0)
    assert result.low is not None and result.high is not None
    assert 0.0 <= result.low <= result.mean <= result.high <= 1.0  # type: ignore[operator]


def test_the_log_interval_is_the_reference_t_interval_of_the_logs_exponentiated() -> None:
    values = [82.0, 20.0, 140.0]
    mean, low, high = _reference_t_interval([math.log(v) for v in values])
    result = log_interval(values)
    assert (result.mean, result.low, result.high) == pytest.approx((math.exp(mean), math.exp(low), math.exp(high)))


def test_the_bounded_interval_is_the_reference_t_interval_clipped_to_the_range() -> None:
    values = [0.05, 0.9, 0.95]
    mean, low, high = _reference_t_interval(values)
    assert low < 0 and high > 1  # the t interval alone would leave [0, 1] on both sides
    result = bounded_interval(values, 0.0, 1.0)
    assert (result.mean, result.low, result.high) == pytest.approx((mean, 0.0, 1.0))
    inside = bounded_interval([0.4, 0.5, 0.6], 0.0, 1.0)
    assert (inside.low, inside.high) == pytest.approx(_reference_t_interval([0.4, 0.5, 0.6])[1:])


def test_a_weighted_reward_declares_the_range_of_its_weighted_sum() -> None:
    assert weighted_reward_range([("brightness", 1.0)]) == (0.0, 1.0)
    assert weighted_reward_range([("brightness", 2.0), ("orange_background", -0.5)]) == (-0.5, 2.0)
    assert weighted_reward_range([("brightness", 1.0), ("pickscore", 1.0)]) is None
    assert weighted_reward_range([]) is None


def test_the_summary_s_reward_intervals_stay_in_the_declared_range_with_two_seeds() -> None:
    cells = [
        CellFigures(
            {"executor.name": "native", "seed": seed},
            seed,
            CompareRow(
                id=seed,
                name=f"job{seed}",
                status="succeeded",
                executor="native",
                algorithm="flow_grpo",
                steps=4,
                samples_per_s=[82.0, 20.0][seed - 1],
                speedup=None,
                bound=None,
                of_bound=None,
                peak_memory_bytes=1e9,
                final_reward=reward,
                best_reward=reward,
                eval_reward=reward,
                eval_step=4,
                started_at=None,
                ended_at=None,
                duration_s=None,
                shared_with=[],
            ),
            reward_range=(0.0, 1.0),
        )
        for seed, reward in ((1, 0.05), (2, 0.95))
    ]
    (group,) = summarize(cells, {}).groups
    assert group.eval_reward.low == 0.0 and group.eval_reward.high == 1.0
    assert group.final_reward.low == 0.0 and group.reward_range == [0.0, 1.0]
    assert group.samples_per_s.low is not None and group.samples_per_s.low > 0
