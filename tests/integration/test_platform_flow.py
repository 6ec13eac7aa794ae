"""End to end on real processes: a 2-rank torchrun job of the tiny model succeeds with its metrics and
samples stored through the API, and a running job is cancelled — on PostgreSQL + Redis, and on the
embedded default (SQLite + kombu's SQLAlchemy broker)."""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from typing import Any

import pytest
from platform_harness import TINY_SPEC, Platform, still_alive_after

pytestmark = pytest.mark.slow


def tiny_spec(**algorithm: Any) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(TINY_SPEC.read_text())
    spec["algorithm"].update(algorithm)
    spec["samples"] = {"every": 1, "count": 1}
    spec["checkpoint"] = {"every": 0}
    return spec


def run_two_rank_job_and_cancel_another(platform: Platform) -> None:
    """A 2-rank job and a long 1-rank job side by side (the worker offers 3 CPU slots)."""
    spec = tiny_spec(total_steps=2)
    spec["resources"] = {"devices": 2, "device_type": "cpu"}
    job_id = platform.submit(spec)
    long_id = platform.submit(tiny_spec(total_steps=1000))

    platform.wait_for("the long job to train a step", lambda: platform.job(long_id)["step"] >= 1, timeout=120)
    trainers = platform.processes(f"jobs/{long_id}/spec.json")
    assert trainers, "no trainer process is running the long job"
    with platform.client() as http:
        assert http.post(f"/api/v1/jobs/{long_id}/cancel").is_success
    cancelled = platform.wait_status(long_id, ("cancelled", "succeeded", "failed"), timeout=30)
    assert cancelled["status"] == "cancelled"
    assert cancelled["step"] < 1000
    assert not still_alive_after(trainers, timeout=30), "the cancelled job's trainer processes are still running"

    done = platform.wait_status(job_id, ("succeeded", "failed", "cancelled"), timeout=180)
    assert done["status"] == "succeeded", f"{done['error']}\n{platform.output()}"
    assert done["attempt"] == 1
    assert [e["status"] for e in done["events"]] == ["queued", "scheduled", "running", "succeeded"]
    with platform.client() as http:
        series = http.get(f"/api/v1/jobs/{job_id}/metrics", params={"keys": "reward/mean,loss"}).json()["series"]
        samples = http.get(f"/api/v1/jobs/{job_id}/samples").json()["items"]
        image = http.get(samples[0]["image_url"]) if samples else None
        logs = http.get(f"/api/v1/jobs/{job_id}/logs").json()["lines"]
        hosts = http.get("/api/v1/hosts").json()["items"]
    assert {s["key"]: s["steps"] for s in series} == {"reward/mean": [1, 2], "loss": [1, 2]}
    assert samples and image is not None and image.status_code == 200 and image.content
    assert any("2 rank(s)" in line["text"] for line in logs), logs
    ours = next(h for h in hosts if h["name"] == platform.host_name)
    assert not any(d["busy"] for d in ours["devices"]), "devices still held after the jobs ended"


def test_a_job_runs_on_postgres_and_redis_and_a_running_job_can_be_cancelled(
    start_platform: Callable[[str, str], Platform], postgres_url: str, redis_url: str
):
    run_two_rank_job_and_cancel_another(start_platform(postgres_url, redis_url))


def test_sfumato_up_runs_the_embedded_platform_and_ctrl_c_stops_every_child(sfumato_up: Platform):
    run_two_rank_job_and_cancel_another(sfumato_up)
    up = sfumato_up.procs["up"]
    children = [proc for proc in sfumato_up.processes() if proc.pid != up.pid]
    assert len(children) >= 3, "server, scheduler and worker run as children of `sfumato up`"

    up.send_signal(signal.SIGINT)

    assert up.wait(timeout=60) == 0
    assert still_alive_after(children, timeout=30) == []
