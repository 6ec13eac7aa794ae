"""End to end on real processes: a 2-rank torchrun job of the tiny model succeeds with its metrics and
samples stored through the API, and a running job is cancelled — on PostgreSQL + Redis, and on the
embedded default (SQLite + kombu's SQLAlchemy broker)."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from platform_harness import TINY_SPEC, Platform, live_processes

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
    run_folder = f"jobs/{long_id}/spec.json"
    assert live_processes(run_folder), "no trainer process is running the long job"
    with platform.client() as http:
        assert http.post(f"/api/v1/jobs/{long_id}/cancel").is_success
    cancelled = platform.wait_status(long_id, ("cancelled", "succeeded", "failed"), timeout=30)
    assert cancelled["status"] == "cancelled"
    assert cancelled["step"] < 1000
    platform.wait_for("the trainer processes to exit", lambda: not live_processes(run_folder), timeout=30)

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


def descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                ppid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(proc.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_sfumato_up_runs_the_embedded_platform_and_ctrl_c_stops_every_child(sfumato_up: Platform):
    run_two_rank_job_and_cancel_another(sfumato_up)
    up = sfumato_up.procs["up"]
    children = descendants(up.pid)
    assert len(children) >= 3, "server, scheduler and worker run as children of `sfumato up`"

    up.send_signal(signal.SIGINT)

    assert up.wait(timeout=60) == 0
    time.sleep(0.5)
    assert [pid for pid in children if alive(pid)] == []
