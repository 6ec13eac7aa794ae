"""Outages of the platform's own parts do not fail the jobs that score through a reward service: its server killed
with SIGKILL and restarted by the worker's supervisor, or the API restarted while the job scores, and every metric
key of the run still has each step exactly once. A reward server gone for good ends each attempt as a restart of
the platform, as for a lost host, and the job fails naming the reward once `retry.max_platform_restarts` are used."""

from __future__ import annotations

import contextlib
import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import psutil
import pytest
from fault_harness import Cluster, steps_off_per_key, stored_points, tiny_spec
from platform_harness import free_port

pytestmark = pytest.mark.slow  # real server, scheduler, worker, reward server and trainers

TOTAL_STEPS = 12
# Enough steps that the test stops the reward server before the job ends, having seen its first step (0.1 s a step
# on a quiet host).
API_RESTART_STEPS = 40
# A short trust in the caller check's yes, so that the API's outage soon meets a reward server that must ask it.
TRUST_SECONDS = 1
SETTINGS = {"SFUMATO_CALLER_TRUST_SECONDS": str(TRUST_SECONDS), "SFUMATO_ALLOW_PRIVATE_URLS": "1"}
SERVICE_REWARD = {"name": "service", "service": "bright", "batch_size": 4, "timeout_s": 10, "outage_window_s": 120}
HONOURING = "honouring callers it accepted"  # the reward server's line when the caller check stops answering


def start_service(cluster: Cluster) -> dict[str, Any]:
    """A `brightness` reward service on one of the host's CPU slots; returns it once healthy."""
    with cluster.platform.client() as http:
        created = http.post(
            "/api/v1/services", json={"name": "bright", "reward": "brightness", "devices": 1, "device_type": "cpu"}
        )
        assert created.status_code == 201, created.text
        service_id = created.json()["id"]
    return dict(cluster.wait_for("the service to be healthy", lambda: healthy_service(cluster, service_id)))


def healthy_service(cluster: Cluster, service_id: int) -> dict[str, Any] | None:
    with cluster.platform.client() as http:
        service = http.get(f"/api/v1/services/{service_id}").json()
    return service if service["state"] == "healthy" else None


def job_logs(cluster: Cluster, job_id: int) -> list[str]:
    with cluster.platform.client() as http:
        return [line["text"] for line in http.get(f"/api/v1/jobs/{job_id}/logs").json()["lines"]]


def service_log(cluster: Cluster, service_id: int) -> str:
    """What the service's reward servers printed, every generation (the worker writes it under the artifacts)."""
    folder = Path(cluster.platform.env["SFUMATO_HOME"]) / "artifacts" / "services" / str(service_id) / "logs"
    return "".join(path.read_text(errors="replace") for path in sorted(folder.glob("*.log")))


def trainer_metrics(cluster: Cluster, job_id: int) -> list[dict[str, float]]:
    """The trainer's own record of its steps, in the job's run folder (readable while the API is down)."""
    metrics = Path(cluster.platform.env["SFUMATO_HOME"]) / "artifacts" / "jobs" / str(job_id) / "metrics.jsonl"
    return [json.loads(line) for line in metrics.read_text().splitlines()] if metrics.exists() else []


def trainer_steps(cluster: Cluster, job_id: int) -> int:
    return len(trainer_metrics(cluster, job_id))


def reward_server(cluster: Cluster, service: dict[str, Any]) -> psutil.Process:
    [server] = cluster.platform.processes("reward-server", f"/api/v1/services/{service['id']}/caller")
    return server


def trainer_waits_on(cluster: Cluster, service: dict[str, Any]) -> bool:
    """Whether a trainer holds a connection to the service's server: with the server stopped (SIGSTOP), its request
    waits there, so the job cannot finish before the test has made its outage (a step takes 0.1 s on a quiet host)."""
    port = urlsplit(service["url"]).port
    for trainer in cluster.platform.processes("trainer", "run"):
        try:
            if any(c.raddr and c.raddr.port == port for c in trainer.net_connections(kind="tcp")):
                return True
        except psutil.Error:
            continue
    return False


def assert_succeeded_with_every_step_once(
    cluster: Cluster, postgres_url: str, job_id: int, total_steps: int = TOTAL_STEPS
) -> None:
    done = cluster.wait_done(job_id, timeout=240)
    assert done["status"] == "succeeded", f"{done['error']}\n{cluster.output()}"
    events = [(e["status"], e["message"]) for e in done["events"]]
    assert done["attempt"] == 1, f"waited out, not retried: {events}\n{cluster.output()}"
    assert steps_off_per_key(postgres_url, job_id, total_steps) == {}  # no key lost or doubled a step
    logged = {key for row in trainer_metrics(cluster, job_id) for key in row} - {"step"}
    stored = {key for key, _step, _attempt, _superseded in stored_points(postgres_url, job_id)}
    assert logged and logged <= stored, f"keys the trainer logged but the database lacks: {logged - stored}"


def test_a_reward_server_killed_mid_job_is_restarted_and_the_job_succeeds_with_every_step_once(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str
):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 2}, **SETTINGS)
    service = start_service(cluster)
    server = reward_server(cluster, service)
    server.suspend()
    job_id = cluster.submit(tiny_spec(TOTAL_STEPS, samples={"count": 0}, reward=[SERVICE_REWARD]))
    cluster.wait_for("the trainer's request at the stopped reward server", lambda: trainer_waits_on(cluster, service))

    # On a loaded host the supervisor may already have killed the stopped server for failing its health checks.
    with contextlib.suppress(psutil.NoSuchProcess):
        server.send_signal(signal.SIGKILL)
    restarted = cluster.wait_for(
        "the supervisor to restart the server",
        lambda: (s := healthy_service(cluster, service["id"])) and s["restarts"] >= 1 and s,
        timeout=120,
    )

    assert_succeeded_with_every_step_once(cluster, postgres_url, job_id)
    assert restarted["url"] == service["url"]
    logs = job_logs(cluster, job_id)
    assert any("reward 'remote' at" in line and "try 1 failed" in line for line in logs), "\n".join(logs)


def test_an_api_restart_while_a_job_scores_through_a_service_does_not_fail_it(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str
):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 2}, **SETTINGS)
    service = start_service(cluster)
    server = reward_server(cluster, service)
    job_id = cluster.submit(tiny_spec(API_RESTART_STEPS, samples={"count": 0}, reward=[SERVICE_REWARD]))
    cluster.wait_for("the first scored step", lambda: trainer_steps(cluster, job_id) >= 1, timeout=120)
    server.suspend()  # the trainer's next request waits until the API is down and the caller's trust has run out
    trusted_until = time.monotonic() + TRUST_SECONDS
    cluster.wait_for("the trainer's request at the stopped reward server", lambda: trainer_waits_on(cluster, service))

    cluster.stop("server")
    cluster.wait_for("the caller's trust to run out", lambda: time.monotonic() > trusted_until)
    server.resume()
    cluster.wait_for(
        "the reward server to find the caller check down",
        lambda: HONOURING in service_log(cluster, service["id"]),
        timeout=120,
    )
    scored_before = trainer_steps(cluster, job_id)
    cluster.wait_for(
        "a step scored while the API is down", lambda: trainer_steps(cluster, job_id) > scored_before, timeout=120
    )
    cluster.start_server()

    assert_succeeded_with_every_step_once(cluster, postgres_url, job_id, API_RESTART_STEPS)


def test_a_reward_server_gone_for_good_restarts_the_job_as_for_a_lost_host_then_fails_it_naming_the_reward(
    start_cluster: Callable[..., Cluster], postgres_url: str, redis_url: str
):
    cluster = start_cluster(postgres_url, redis_url, {"alpha": 1}, **SETTINGS)
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there, now or later
    reward = {"name": "remote", "url": url, "timeout_s": 2, "outage_window_s": 2}
    job_id = cluster.submit(tiny_spec(3, samples={"count": 0}, reward=[reward], retry={"max_platform_restarts": 1}))

    done = cluster.wait_done(job_id, timeout=240)
    assert done["status"] == "failed" and done["attempt"] == 2
    queued = [e["message"] for e in done["events"] if e["status"] == "queued"]
    assert any(
        "met a platform outage: RewardServerUnreachable: reward 'remote' at " + url in message
        and message.endswith("; restarted by the platform (1 of 1 restarts)")
        for message in queued
    ), queued
    assert done["error"].startswith("trainer on ")
    assert f"met a platform outage: RewardServerUnreachable: reward 'remote' at {url}: no answer for" in done["error"]
    assert done["error"].endswith("; no platform restarts left (1 of 1 used)")
