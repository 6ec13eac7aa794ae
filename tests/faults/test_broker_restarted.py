"""Redis (the test's own, without persistence) restarts while jobs run and one waits: every queued message and
every unacknowledged delivery is gone, yet no job is lost and none runs twice — the database, not the broker,
says what runs."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fault_harness import Cluster, OwnRedis, steps_off_per_key, tiny_spec

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

TOTAL_STEPS = 4


def test_jobs_survive_a_broker_restart_and_none_runs_twice(
    start_cluster: Callable[..., Cluster], postgres_url: str, own_redis: OwnRedis
):
    cluster = start_cluster(postgres_url, own_redis.url, {"alpha": 1, "beta": 1})
    jobs = [cluster.submit(tiny_spec(TOTAL_STEPS)) for _ in range(3)]

    def two_training_one_queued() -> bool:
        states = sorted((cluster.job(j)["status"], cluster.job(j)["step"] >= 1) for j in jobs)
        return states == [("queued", False), ("running", True), ("running", True)]

    cluster.wait_for("two jobs training, one queued", two_training_one_queued, timeout=90)

    own_redis.stop()
    own_redis.start()

    for job_id in jobs:
        done = cluster.wait_done(job_id, timeout=150)
        assert done["status"] == "succeeded", f"job {job_id}: {done['error']}\n{cluster.output()}"
        assert done["attempt"] == 1, f"job {job_id} ran {done['attempt']} times"
        assert [e["status"] for e in done["events"]].count("running") == 1
        assert steps_off_per_key(postgres_url, job_id, TOTAL_STEPS) == {}
