"""The one definition of a service's figures: percentiles from a cumulative histogram as Prometheus computes
them, and rates over the last minute's scrapes of the same launch (its counters reset on a restart)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from server.services.reward_service_figures import figures, histogram_quantile, rate_window

BUCKETS = [(0.01, 10.0), (0.025, 90.0), (0.05, 100.0), (float("inf"), 100.0)]
T0 = datetime(2026, 11, 30, 12, 0, 0)


def scrape(launch: int, seconds: float, requests: int, images: int) -> dict[str, object]:
    return {
        "launch": launch,
        "scraped_at": (T0 + timedelta(seconds=seconds)).isoformat(),
        "requests": requests,
        "images": images,
        "errors": 1,
        "latency_buckets": [["+Inf" if b == float("inf") else str(b), c] for b, c in BUCKETS],
    }


@pytest.mark.parametrize(
    ("q", "expected"),
    [(0.05, 0.005), (0.5, 0.01 + 0.015 * 40 / 80), (0.9, 0.025), (0.99, 0.025 + 0.025 * 9 / 10)],
)
def test_quantiles_interpolate_linearly_inside_their_bucket(q: float, expected: float) -> None:
    assert histogram_quantile(q, BUCKETS) == pytest.approx(expected)


def test_a_rank_in_the_inf_bucket_answers_the_highest_finite_bound() -> None:
    assert histogram_quantile(0.99, [(0.1, 50.0), (float("inf"), 100.0)]) == 0.1


def test_no_observations_have_no_quantile() -> None:
    assert histogram_quantile(0.5, [(0.1, 0.0), (float("inf"), 0.0)]) is None


def test_rates_come_from_the_oldest_scrape_of_the_window_to_the_last() -> None:
    shown = figures(scrape(1, 4.0, 30, 480), [scrape(1, 2.0, 10, 160), scrape(1, 3.0, 30, 480)])
    assert (shown.requests, shown.images, shown.errors) == (30, 480, 1)
    assert (shown.request_rate, shown.images_per_s) == (10.0, 160.0)
    assert shown.latency_p50_s == pytest.approx(0.0175)


def test_the_window_keeps_the_last_minute_of_one_launch_and_always_the_scrape_before() -> None:
    kept = rate_window([scrape(1, 0.0, 0, 0), scrape(1, 30.0, 5, 80)], scrape(1, 62.0, 9, 144), scrape(1, 64.0, 9, 144))
    assert [s["scraped_at"] for s in kept] == [scrape(1, t, 0, 0)["scraped_at"] for t in (30.0, 62.0)]
    assert rate_window(None, scrape(1, 0.0, 0, 0), scrape(1, 300.0, 9, 144)) == [scrape(1, 0.0, 0, 0)]
    assert rate_window([scrape(1, 0.0, 0, 0)], scrape(1, 2.0, 4, 64), scrape(2, 4.0, 1, 16)) == []


def test_no_rate_across_a_restart() -> None:
    shown = figures(scrape(2, 4.0, 3, 48), [scrape(1, 2.0, 10, 160)])
    assert shown.request_rate is None and shown.requests == 3


def test_a_service_never_scraped_shows_zero_counts_and_no_rates() -> None:
    shown = figures(None, None)
    assert (shown.requests, shown.request_rate, shown.latency_p99_s) == (0, None, None)
