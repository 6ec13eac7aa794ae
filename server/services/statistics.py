"""The few statistics an experiment's summary states: Student's t distribution, a mean's 95% confidence interval
(on the log scale for positive figures, clipped for a figure with a known range), and the paired t-test. SciPy
is not a dependency; the t distribution is computed from the regularized incomplete beta function (continued
fraction, Numerical Recipes 3rd ed. §6.4), whose relation to Student's t is P(|T| > t) = I_{df/(df+t^2)}(df/2,
1/2) (Abramowitz & Stegun 26.7.1 / 26.5.27).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

CONFIDENCE = 0.95
_EPS = 1e-15
_TINY = 1e-300


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b), evaluated by the modified Lentz method."""
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > _TINY else _TINY)
    h = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > _TINY else _TINY)
            c = 1.0 + numerator / c
            c = c if abs(c) > _TINY else _TINY
            h *= d * c
        if abs(d * c - 1.0) < _EPS:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with `df` degrees of freedom."""
    tail = 0.5 * incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.cache
def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p, by bisection on t_cdf (monotone), to full double precision; remembered, as
    a summary asks for the same few (0.975 on n - 1 degrees of freedom) at every poll."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must lie in (0, 1), not {p}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    low, high = 0.0, 1.0
    while t_cdf(high, df) < p:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if middle in (low, high):
            break
        low, high = (middle, high) if t_cdf(middle, df) < p else (low, middle)
    return (low + high) / 2.0


@dataclass(frozen=True)
class MeanInterval:
    mean: float | None
    low: float | None
    high: float | None
    n: int


def mean_interval(values: Sequence[float]) -> MeanInterval:
    """The mean and its 95% interval, mean ± t(0.975, n-1)*s/sqrt(n); no interval below two values."""
    n = len(values)
    if n == 0:
        return MeanInterval(None, None, None, 0)
    mean = math.fsum(values) / n
    if n == 1:
        return MeanInterval(mean, None, None, 1)
    sd = math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))
    half = t_quantile(0.5 + CONFIDENCE / 2.0, n - 1) * sd / math.sqrt(n)
    return MeanInterval(mean, mean - half, mean + half, n)


def log_interval(values: Sequence[float]) -> MeanInterval:
    """A positive figure's (samples/s, memory, a speedup) geometric mean and 95% interval: the mean interval of
    the logs, exponentiated. It never reaches zero or below, and a speedup of 2x and one of 0.5x are as far
    from 1x. Values that are not positive have no logarithm and are left out."""
    logs = mean_interval([math.log(v) for v in values if v > 0])
    return MeanInterval(
        *(None if v is None else math.exp(v) for v in (logs.mean, logs.low, logs.high)),  # type: ignore[arg-type]
        n=logs.n,
    )


def bounded_interval(values: Sequence[float], lowest: float, highest: float) -> MeanInterval:
    """The mean interval of a figure that cannot leave [lowest, highest] (a reward that declares its range, a
    fraction), clipped to that range: the t interval where it fits, the range's end where it would not."""
    result = mean_interval(values)
    if result.low is None or result.high is None:
        return result
    return MeanInterval(result.mean, max(lowest, result.low), min(highest, result.high), result.n)


def paired_t_test(first: Sequence[float], second: Sequence[float]) -> float | None:
    """The two-sided p-value of the paired t-test of first - second; None below two pairs. Identical pairs
    (no spread in the differences) give 1 when they are all zero, else 0."""
    differences = [a - b for a, b in zip(first, second, strict=True)]
    n = len(differences)
    if n < 2:
        return None
    mean = math.fsum(differences) / n
    sd = math.sqrt(math.fsum((d - mean) ** 2 for d in differences) / (n - 1))
    if sd == 0.0:
        return 1.0 if mean == 0.0 else 0.0
    t = mean / (sd / math.sqrt(n))
    return 2.0 * (1.0 - t_cdf(abs(t), n - 1))
