"""Fixtures of the fault tests: a cluster of real processes, and a Redis and a PostgreSQL of the test's own."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fault_harness import Cluster, OwnPostgres, OwnRedis, free_port, launch_cluster, own_postgres_folder, remove_folder


@pytest.fixture
def start_cluster(tmp_path: Path, tiny_model: Path) -> Iterator[Callable[..., Cluster]]:
    """Start a cluster: database URL, broker URL, {host name: CPU slots}, extra SFUMATO_* settings."""
    started: list[Cluster] = []

    def start(database_url: str, broker_url: str, workers: dict[str, int], **env: str) -> Cluster:
        cluster = launch_cluster(tmp_path / f"cluster-{len(started)}", database_url, broker_url, tiny_model, workers,
                                 env)  # fmt: skip
        started.append(cluster)
        return cluster

    yield start
    for cluster in started:
        cluster.platform.stop()


@pytest.fixture
def own_redis(tmp_path: Path, redis_url: str) -> Iterator[OwnRedis]:
    """Needs SFUMATO_TEST_REDIS_URL like every Redis test (CI sets it); the instance itself is the test's."""
    redis = OwnRedis(tmp_path, free_port())
    redis.start()
    yield redis
    redis.stop()


@pytest.fixture
def own_postgres(postgres_server_url: str) -> Iterator[OwnPostgres]:
    """Needs SFUMATO_TEST_POSTGRES_URL like every PostgreSQL test; the cluster itself is the test's."""
    postgres = OwnPostgres(own_postgres_folder(), free_port())
    try:
        postgres.init()
        postgres.start()
        yield postgres
        postgres.stop()
    finally:
        remove_folder(postgres.folder)
