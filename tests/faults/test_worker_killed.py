"""SIGKILL of the worker process in the middle of training: the host is marked lost, the job is retried on
the other host from its latest checkpoint, and the metric series keeps exactly one live value per step."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from fault_harness import Cluster, steps_off_per_key, tiny_spec

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

TOTAL_STEPS = 5


def test_a_killed_worker_s_job_resumes_on_the_other_host_from_its_checkpoint(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str
):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 1, "beta": 1})
    job_id = cluster.submit(tiny_spec(TOTAL_STEPS, checkpoint={"every": 1}))
    cluster.wait_for("two steps and their checkpoints", lambda: cluster.job(job_id)["step"] >= 2, timeout=90)
    first = cluster.job(job_id)
    [victim] = {a["host"] for a in first["allocations"] if a["attempt"] == 1}
    survivor = "beta" if victim == "alpha" else "alpha"

    cluster.kill(f"worker-{victim}")

    done = cluster.wait_done(job_id, timeout=120)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"
    assert done["attempt"] == 2
    assert {a["host"] for a in done["allocations"]} == {survivor}
    events = [(e["status"], e["message"]) for e in done["events"]]
    assert ("queued", f"host {victim} lost; retrying (1 of 3 attempts used)") in events
    with cluster.platform.client() as http:
        logs = [line["text"] for line in http.get(f"/api/v1/jobs/{job_id}/logs").json()["lines"]]
    assert any(line.startswith("resumed from") and "checkpoints/step-" in line for line in logs), logs

    assert steps_off_per_key(postgres_url, job_id, TOTAL_STEPS) == {}
