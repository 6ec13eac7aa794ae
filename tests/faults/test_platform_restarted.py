"""The whole platform (worker, scheduler, server) killed in the middle of a job, then started again: the job goes on
from its checkpoint as a restart of the platform, counted apart from retries after its own failures (a job
allowed one attempt for its own failures still succeeds), and its duration leaves out the time the platform was
down."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from fault_harness import Cluster, launch_cluster, tiny_spec
from platform_harness import still_alive_after

from server.config import Settings
from server.db import scratch_postgres_database
from server.services.job_runs import job_run_dir
from trainer.run import METRICS_FILE

pytestmark = pytest.mark.slow  # real server, scheduler, worker and trainer

TOTAL_STEPS = 30  # a quiet host runs a step in about 0.1 s: the kill must land while steps remain


@dataclass
class RestartedJob:
    job: dict[str, Any]
    down_s: float  # from the worker's death to the platform's new start, as this test measured it


def crash(cluster: Cluster, name: str) -> None:
    """SIGKILL to the process's whole group, as a machine stopping would (the server's own processes too)."""
    proc = cluster.platform.procs.pop(name)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


@pytest.fixture(scope="module")
def restarted(
    tmp_path_factory: pytest.TempPathFactory, tiny_model: Path, postgres_server_url: str, redis_url: str
) -> Iterator[RestartedJob]:
    with scratch_postgres_database(postgres_server_url, "sfumato_test") as database_url:
        cluster = launch_cluster(tmp_path_factory.mktemp("restart"), database_url, redis_url, tiny_model, {"alpha": 1})
        try:
            spec = tiny_spec(TOTAL_STEPS, checkpoint={"every": 1}, retry={"max_attempts": 1})
            job_id = cluster.submit(spec)
            home = Path(cluster.platform.env["SFUMATO_HOME"])
            metrics = job_run_dir(Settings(home=home).resolved_artifact_root(), job_id) / METRICS_FILE
            cluster.wait_for(  # the trainer's own file: the API's step lags a report interval
                "two steps", lambda: metrics.exists() and len(metrics.read_text().splitlines()) >= 2, timeout=90
            )
            trainers = cluster.platform.processes("trainer", "run")

            cluster.kill("worker-alpha")  # its trainer gets SIGTERM as its parent dies
            down_at = time.time()
            crash(cluster, "scheduler")
            crash(cluster, "server")
            assert still_alive_after(trainers, timeout=60) == []
            up_at = time.time()
            cluster.start_server()
            cluster.start_scheduler()
            cluster.start_worker("alpha", 1)

            done = cluster.wait_done(job_id, timeout=180)
            assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"
            yield RestartedJob(done, up_at - down_at)
        finally:
            cluster.platform.stop()


def test_the_restart_is_counted_as_the_platform_s_not_as_a_retry_after_the_job_s_failure(restarted: RestartedJob):
    job = restarted.job

    assert (job["attempt"], job["retries_after_failure"], job["platform_restarts"]) == (2, 0, 1)
    assert job["attempts_summary"] == "attempt 2 · 0 retries after failure (max 0) · 1 restart of the platform (max 10)"


def test_the_duration_leaves_out_the_time_the_platform_was_down(restarted: RestartedJob):
    job = restarted.job
    span_s = (datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["started_at"])).total_seconds()

    assert job["duration_s"] <= span_s - restarted.down_s
