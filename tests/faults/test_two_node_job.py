"""Two worker processes posing as two hosts with one CPU slot each: a 2-node job rendezvouses (c10d on the
first node), trains across both, and both nodes' logs are collected."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fault_harness import Cluster, live_metric_steps, tiny_spec

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

TOTAL_STEPS = 3


def test_a_two_node_job_runs_across_two_hosts(start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 1, "beta": 1})
    spec = tiny_spec(TOTAL_STEPS, resources={"devices": 1, "device_type": "cpu", "nodes": 2})

    job_id = cluster.submit(spec)

    done = cluster.wait_done(job_id, timeout=150)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"
    assert sorted((a["node_rank"], a["host"]) for a in done["allocations"]) in (
        [(0, "alpha"), (1, "beta")],
        [(0, "beta"), (1, "alpha")],
    )
    with cluster.platform.client() as http:
        lines = http.get(f"/api/v1/jobs/{job_id}/logs").json()["lines"]
    assert {line["node_rank"] for line in lines} == {0, 1}
    assert any("2 rank(s)" in line["text"] for line in lines)
    assert live_metric_steps(cluster, job_id) == list(range(1, TOTAL_STEPS + 1))
