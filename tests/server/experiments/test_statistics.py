"""Student's t and the intervals, against closed forms and published tables (no SciPy here to lean on).

Closed forms: with 1 degree of freedom t is Cauchy, quantile tan(pi (p - 1/2)); with 2, the CDF is
1/2 + t / (2 sqrt(2 + t^2)) and the quantile (2p - 1) / sqrt(2 p (1 - p)).
Tables: t(0.975; 4) = 2.776445, t(0.975; 9) = 2.262157, t(0.975; 30) = 2.042272 (NIST/SEMATECH e-Handbook 1.3.6.7.2).
"""

from __future__ import annotations

import math

import pytest

from server.services.statistics import log_interval, mean_interval, paired_t_test, t_cdf, t_quantile


@pytest.mark.parametrize("p", [0.6, 0.9, 0.975, 0.995])
def test_the_quantile_with_one_and_two_degrees_of_freedom_matches_the_closed_forms(p: float) -> None:
    assert t_quantile(p, 1) == pytest.approx(math.tan(math.pi * (p - 0.5)), rel=1e-12)
    assert t_quantile(p, 2) == pytest.approx((2 * p - 1) / math.sqrt(2 * p * (1 - p)), rel=1e-12)


@pytest.mark.parametrize(("df", "table"), [(4, 2.776445), (9, 2.262157), (30, 2.042272)])
def test_the_975_quantile_matches_the_published_table(df: int, table: float) -> None:
    assert round(t_quantile(0.975, df), 6) == table


@pytest.mark.parametrize("t", [-3.0, -0.4, 0.0, 1.0, 7.5])
def test_the_cdf_with_two_degrees_of_freedom_matches_the_closed_form(t: float) -> None:
    assert t_cdf(t, 2) == pytest.approx(0.5 + t / (2 * math.sqrt(2 + t * t)), abs=1e-13)


def test_the_quantile_is_symmetric_and_inverts_the_cdf() -> None:
    assert t_quantile(0.025, 7) == -t_quantile(0.975, 7)
    assert t_cdf(t_quantile(0.9, 7), 7) == pytest.approx(0.9, abs=1e-13)


def test_a_mean_interval_by_hand() -> None:
    # 10, 12, 14: mean 12, s = 2, s / sqrt(3) = 1.154701; t(0.975; 2) = 4.302653 → 12 ± 4.968275.
    result = mean_interval([10.0, 12.0, 14.0])
    assert (result.mean, result.n) == (12.0, 3)
    assert result.low == pytest.approx(7.031725, abs=1e-6)
    assert result.high == pytest.approx(16.968275, abs=1e-6)


def test_one_value_has_a_mean_and_no_interval_and_none_has_neither() -> None:
    assert mean_interval([3.0]) == type(mean_interval([3.0]))(3.0, None, None, 1)
    assert mean_interval([]).mean is None


def test_a_log_interval_is_the_log_interval_exponentiated() -> None:
    # ratios 1.2, 1.3, 1.4 → logs 0.1823216, 0.2623643, 0.3364722; mean 0.2603860, s 0.0770942, half-width
    # 4.302653 x 0.0770942 / sqrt(3) = 0.1915112 → exp(mean ± half): 1.29743 [1.07130, 1.57129].
    result = log_interval([1.2, 1.3, 1.4])
    assert result.mean == pytest.approx(1.29743, abs=1e-5)
    assert result.low == pytest.approx(1.07130, abs=1e-5)
    assert result.high == pytest.approx(1.57129, abs=1e-5)


def test_the_paired_t_test_by_hand() -> None:
    # differences 0.1, -0.1, 0.3: mean 0.1, s 0.2, t = 0.1 / (0.2 / sqrt 3) = 0.866025 with 2 df;
    # two-sided p = 1 - t / sqrt(2 + t^2) = 1 - 0.866025 / 1.658312 = 0.477767.
    p = paired_t_test([1.1, 0.9, 1.3], [1.0, 1.0, 1.0])
    assert p == pytest.approx(0.477767, abs=1e-6)
    assert paired_t_test([1.0], [1.0]) is None
    assert paired_t_test([1.0, 2.0], [1.0, 2.0]) == 1.0
