"""PostgreSQL (the test's own) restarts while jobs run and one waits: the server, the scheduler and the workers
reconnect, training goes on through the outage, and every job ends; none is left non-terminal."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fault_harness import Cluster, OwnPostgres, steps_off_per_key, tiny_spec
from sqlalchemy import create_engine, text

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

TOTAL_STEPS = 4


def job_read_fails(cluster: Cluster, job_id: int) -> bool:
    """The server answers a read that needs the database with a server error: the outage is felt."""
    with cluster.platform.client() as http:
        return http.get(f"/api/v1/jobs/{job_id}").status_code >= 500


def test_every_job_ends_after_a_database_restart(
    start_cluster: Callable[..., Cluster], own_postgres: OwnPostgres, redis_url: str
):
    # Heartbeats stop while the database is away; a generous lost-host timeout keeps the outage from
    # counting as a dead host (that fault has its own test).
    cluster = start_cluster(own_postgres.url, redis_url, {"alpha": 2}, SFUMATO_HOST_LOST_AFTER_SECONDS="30")
    jobs = [cluster.submit(tiny_spec(TOTAL_STEPS)) for _ in range(3)]
    cluster.wait_for("two jobs training", lambda: [cluster.job(j)["step"] >= 1 for j in jobs[:2]] == [True] * 2,
                     timeout=90)  # fmt: skip

    own_postgres.stop()
    cluster.wait_for("the server to meet the outage", lambda: job_read_fails(cluster, jobs[0]), timeout=30)
    own_postgres.start()

    for job_id in jobs:
        done = cluster.wait_done(job_id, timeout=150)
        assert done["status"] == "succeeded", f"job {job_id}: {done['error']}\n{cluster.output()}"
        assert steps_off_per_key(own_postgres.url, job_id, TOTAL_STEPS) == {}
    engine = create_engine(own_postgres.url)
    with engine.connect() as conn:
        unfinished = conn.execute(text("SELECT count(*) FROM jobs WHERE status IN ('queued','scheduled','running')"))
        held = conn.execute(text("SELECT count(*) FROM allocations WHERE released_at IS NULL"))
        assert (unfinished.scalar(), held.scalar()) == (0, 0)
    engine.dispose()
