"""SIGKILL of the worker process in the middle of training: the host is marked lost, the job is retried on
the other host from its latest checkpoint, and the metric series keeps exactly one live value per step."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from fault_harness import Cluster, steps_off_per_key, tiny_spec

from server.config import Settings
from server.services.job_runs import job_run_dir
from trainer.run import METRICS_FILE

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

TOTAL_STEPS = 30  # a quiet host runs a step in about 0.1 s: the kill must land while steps remain


def test_a_killed_worker_s_job_resumes_on_the_other_host_from_its_checkpoint(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str
):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 1, "beta": 1})
    job_id = cluster.submit(tiny_spec(TOTAL_STEPS, checkpoint={"every": 1}))
    logged = job_run_dir(Settings(home=Path(cluster.platform.env["SFUMATO_HOME"])).resolved_artifact_root(), job_id)
    cluster.wait_for(  # the trainer's own file: the API's step lags by a report interval, longer than a quiet run
        "two steps and their checkpoints",
        lambda: (logged / METRICS_FILE).exists() and len((logged / METRICS_FILE).read_text().splitlines()) >= 2,
        timeout=90,
    )
    first = cluster.job(job_id)
    [victim] = {a["host"] for a in first["allocations"] if a["attempt"] == 1}
    survivor = "beta" if victim == "alpha" else "alpha"

    cluster.kill(f"worker-{victim}")

    done = cluster.wait_done(job_id, timeout=120)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"
    assert done["attempt"] == 2
    assert {a["host"] for a in done["allocations"]} == {survivor}
    events = [(e["status"], e["message"]) for e in done["events"]]
    assert ("queued", f"host {victim} lost; restarted by the platform (1 of 10 restarts)") in events
    with cluster.platform.client() as http:
        logs = [line["text"] for line in http.get(f"/api/v1/jobs/{job_id}/logs").json()["lines"]]
    assert any(line.startswith("resumed from") and "checkpoints/step-" in line for line in logs), logs

    assert steps_off_per_key(postgres_url, job_id, TOTAL_STEPS) == {}
