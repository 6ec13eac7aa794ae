"""A reward server's Prometheus text, as prometheus_client writes it, read into the scrape the platform stores."""

from __future__ import annotations

from datetime import datetime

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

from worker.service_metrics import parse_scrape


def test_counters_and_latency_buckets_are_read_from_the_exposition() -> None:
    registry = CollectorRegistry()
    requests = Counter("sfumato_reward_requests", "r", registry=registry)
    images = Counter("sfumato_reward_images", "i", registry=registry)
    Counter("sfumato_reward_errors", "e", registry=registry)
    latency = Histogram("sfumato_reward_request_seconds", "l", buckets=(0.01, 0.1), registry=registry)
    for seconds in (0.005, 0.05, 0.5):
        requests.inc()
        images.inc(16)
        latency.observe(seconds)

    scrape = parse_scrape(generate_latest(registry).decode(), launch=2, scraped_at=datetime(2026, 11, 30))

    assert scrape == {
        "launch": 2,
        "scraped_at": "2026-11-30T00:00:00",
        "requests": 3,
        "images": 48,
        "errors": 0,
        "latency_buckets": [["0.01", 1.0], ["0.1", 2.0], ["+Inf", 3.0]],
    }
