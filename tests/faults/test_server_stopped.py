"""The server stops while a trainer streams: the trainer keeps training into its spool, and after the restart
every step's metrics and every sample arrive, once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest
from fault_harness import Cluster, steps_off_per_key, stored_points, tiny_spec

from server.config import Settings
from server.services.job_runs import job_run_dir
from trainer.run import METRICS_FILE

pytestmark = pytest.mark.slow  # real server, scheduler, workers and trainers

TOTAL_STEPS = 6
# The outage lasts until the trainer has finished every step with nowhere to send them (its run
# folder's metrics.jsonl has them all); a finished trainer waits for the server to take its last events
# (reporter CLOSE_TIMEOUT_S).
OUTAGE_TIMEOUT_SECONDS = 120


def test_metrics_and_samples_sent_while_the_server_is_down_arrive_once_after_it_returns(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str
):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 1})
    job_id = cluster.submit(tiny_spec(TOTAL_STEPS, samples={"every": 2, "count": 1}))
    cluster.wait_for("the first step", lambda: cluster.job(job_id)["step"] >= 1, timeout=90)

    cluster.stop("server")
    home = Path(cluster.platform.env["SFUMATO_HOME"])
    logged = job_run_dir(Settings(home=home).resolved_artifact_root(), job_id) / METRICS_FILE
    cluster.wait_for(
        "the trainer to finish every step while the server is down",
        lambda: logged.exists() and len(logged.read_text().splitlines()) == TOTAL_STEPS,
        timeout=OUTAGE_TIMEOUT_SECONDS,
    )
    cluster.start_server()

    done = cluster.wait_done(job_id, timeout=120)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"
    assert done["step"] == TOTAL_STEPS
    with cluster.platform.client() as http:
        logs = [line["text"] for line in http.get(f"/api/v1/jobs/{job_id}/logs").json()["lines"]]
        samples = http.get(f"/api/v1/jobs/{job_id}/samples").json()["items"]
    assert sum(line.startswith("step ") for line in logs) == TOTAL_STEPS

    assert steps_off_per_key(postgres_url, job_id, TOTAL_STEPS) == {}
    points = Counter((key, step) for key, step, _attempt, _superseded in stored_points(postgres_url, job_id))
    assert set(points.values()) == {1}, "a point was stored twice"
    # Eval samples at step 0 (before training), 2, 4 and 6: one per eval prompt (2), each once; train samples,
    # if any, once too.
    assert Counter((s["step"], s["prompt"], s["seed"]) for s in samples if s["kind"] == "eval") == {
        (step, prompt, 0): 1 for step in (0, 2, 4, 6) for prompt in ("a red apple", "a blue car")
    }
    assert set(Counter((s["kind"], s["step"], s["prompt"], s["seed"]) for s in samples).values()) == {1}
