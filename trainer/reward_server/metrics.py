"""The reward server's Prometheus metrics (GET /metrics): requests, images, errors, latency and batch sizes.

Images per second is the rate of ``sfumato_reward_images_total``; the batch-size histogram shows how well
dynamic batching merges the callers.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest

LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)


class ServerMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "sfumato_reward_requests", "Score requests answered, whatever the answer", registry=self.registry
        )
        self.images = Counter("sfumato_reward_images", "Images scored", registry=self.registry)
        self.errors = Counter(
            "sfumato_reward_errors", "Score requests answered with an error (4xx or 5xx)", registry=self.registry
        )
        self.latency = Histogram(
            "sfumato_reward_request_seconds",
            "Seconds from a score request's arrival to its answer",
            buckets=LATENCY_BUCKETS,
            registry=self.registry,
        )
        self.batch_size = Histogram(
            "sfumato_reward_batch_size",
            "Images per batch the reward ran on",
            buckets=BATCH_BUCKETS,
            registry=self.registry,
        )

    def exposition(self) -> bytes:
        return generate_latest(self.registry)
