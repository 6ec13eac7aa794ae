"""Two worker processes posing as two hosts with one CPU slot each: a 2-node job rendezvouses (static, on the
first node), trains across both, and both nodes' logs are collected. One node's worker is killed mid-run: the
host is lost, the other node is told to stop, and the job is retried as a whole from its checkpoint once the
host is back, instead of failing on the survivor's error or waiting for a timeout.

One test, not two, to keep the suite's time: the retried attempt is itself a 2-node run that must succeed.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fault_harness import Cluster, steps_off_per_key, tiny_spec

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

TOTAL_STEPS = 4


def test_a_two_node_job_runs_across_two_hosts_and_a_lost_node_retries_it_as_a_whole(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str
):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 1, "beta": 1})
    resources = {"devices": 1, "device_type": "cpu", "nodes": 2}
    job_id = cluster.submit(tiny_spec(TOTAL_STEPS, checkpoint={"every": 1}, resources=resources))
    cluster.wait_for("two steps and their checkpoints", lambda: cluster.job(job_id)["step"] >= 2, timeout=150)
    [lost] = {a["host"] for a in cluster.job(job_id)["allocations"] if a["node_rank"] == 1}

    cluster.kill(f"worker-{lost}")  # its trainer gets SIGTERM from the parent-death signal
    cluster.wait_for(f"{lost} lost", lambda: {h["name"]: h["status"] for h in cluster.hosts()}.get(lost) == "lost")
    cluster.start_worker(lost)

    done = cluster.wait_done(job_id, timeout=150)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"
    assert done["attempt"] == 2
    events = [(e["status"], e["message"]) for e in done["events"]]
    assert ("queued", f"host {lost} lost; restarted by the platform (1 of 10 restarts)") in events
    assert all(status != "failed" for status, _ in events), events
    assert sorted((a["node_rank"], a["host"]) for a in done["allocations"] if a["attempt"] == 2) in (
        [(0, "alpha"), (1, "beta")],
        [(0, "beta"), (1, "alpha")],
    )
    with cluster.platform.client() as http:
        lines = http.get(f"/api/v1/jobs/{job_id}/logs").json()["lines"]
    assert {line["node_rank"] for line in lines if line["attempt"] == 2} == {0, 1}
    assert any("2 rank(s)" in line["text"] for line in lines)
    assert steps_off_per_key(postgres_url, job_id, TOTAL_STEPS) == {}
