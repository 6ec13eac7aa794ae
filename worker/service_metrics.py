"""Reading a reward server's Prometheus text (`GET /metrics`, docs/rewards.md) into the scrape the platform
stores: counters summed over their labels and the latency histogram's cumulative buckets."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

REQUESTS = "sfumato_reward_requests"
IMAGES = "sfumato_reward_images"
ERRORS = "sfumato_reward_errors"
LATENCY = "sfumato_reward_request_seconds"


def parse_scrape(text: str, launch: int, scraped_at: datetime) -> dict[str, Any]:
    """`{"launch", "scraped_at", "requests", "images", "errors", "latency_buckets"}`; `launch` counts the
    server's starts within its generation, so rates are never taken across a restart (counters reset)."""
    totals = {REQUESTS: 0.0, IMAGES: 0.0, ERRORS: 0.0}
    buckets: dict[float, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if family.name in totals and sample.name == f"{family.name}_total":
                totals[family.name] += sample.value
            elif family.name == LATENCY and sample.name == f"{LATENCY}_bucket":
                bound = float(sample.labels["le"])
                buckets[bound] = buckets.get(bound, 0.0) + sample.value
    return {
        "launch": launch,
        "scraped_at": scraped_at.isoformat(),
        "requests": _count(totals[REQUESTS]),
        "images": _count(totals[IMAGES]),
        "errors": _count(totals[ERRORS]),
        "latency_buckets": [
            ["+Inf" if math.isinf(b) else repr(b), buckets[b]] for b in sorted(buckets) if math.isfinite(buckets[b])
        ],
    }


def _count(value: float) -> int | None:
    """A counter as stored: JSON (and PostgreSQL's json) has no NaN or infinity, so those are unknown."""
    return int(value) if math.isfinite(value) else None
