"""End to end on real processes (server, scheduler, Celery worker, torchrun, `sfumato reward-server`): a reward
service serving `brightness` is placed on a CPU slot and becomes healthy, two tiny-model jobs share it and
succeed, the Services API shows its request counts, a killed server is restarted, and a stop frees its device."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from platform_harness import TINY_SPEC, Platform, still_alive_after

pytestmark = pytest.mark.slow

DOCS_IMAGE = Path(__file__).resolve().parents[2] / "docs" / "images" / "services.png"
CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"


def service_job(name: str) -> dict[str, Any]:
    spec: dict[str, Any] = json.loads(TINY_SPEC.read_text())
    spec["name"] = name
    spec["algorithm"].update(total_steps=3)
    spec["reward"] = [{"name": "service", "service": "bright", "weight": 1.0, "batch_size": 4}]
    spec["samples"] = {"every": 2, "count": 1}
    spec["checkpoint"] = {"every": 0}
    return spec


def reward_servers(platform: Platform, service_id: int) -> list[psutil.Process]:
    """The platform's live `reward-server` processes of the service (its caller-check URL names it)."""
    return platform.processes("reward-server", f"{platform.url}/api/v1/services/{service_id}/caller")


def screenshot_services_page(platform: Platform, service_id: int) -> None:
    """The Services page at 1280 px with the service's figures under test-artifacts, and with
    SFUMATO_UPDATE_README_IMAGES=1 as docs/images/services.png (the closing note's evidence); skipped without
    Chromium. A plain test run leaves the tracked files as they are."""
    if not CHROMIUM.exists():
        return
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=["--headless", "--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 720})
        page.goto(f"{platform.url}/login")
        page.fill("input[name=token]", platform.token)
        page.click("button[type=submit]")
        page.wait_for_url(f"{platform.url}/jobs")
        page.goto(f"{platform.url}/services")
        page.click(f"#service-{service_id} summary")
        target = DOCS_IMAGE if os.environ.get("SFUMATO_UPDATE_README_IMAGES") else ARTIFACTS / "services.png"
        target.parent.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(target), full_page=True)
        browser.close()


def test_two_jobs_share_a_reward_service_that_restarts_when_killed_and_frees_its_device_when_stopped(
    start_platform: Callable[[str, str], Platform], postgres_url: str, redis_url: str
):
    platform = start_platform(postgres_url, redis_url)
    with platform.client() as http:
        created = http.post(
            "/api/v1/services", json={"name": "bright", "reward": "brightness", "devices": 1, "device_type": "cpu"}
        )
        assert created.status_code == 201, created.text
        service_id = created.json()["id"]
        jobs = [platform.submit(service_job(f"shared-{i}")) for i in (1, 2)]

        def service() -> dict[str, Any]:
            return dict(http.get(f"/api/v1/services/{service_id}").json())

        healthy = platform.wait_for("the service to be healthy", lambda: service()["state"] == "healthy" and service())
        assert healthy["host"] == platform.host_name and len(healthy["device_indices"]) == 1
        assert {j["id"] for j in healthy["jobs"]} == set(jobs)

        def both_scoring() -> dict[str, Any] | None:
            now = service()
            statuses = {platform.job(job_id)["status"] for job_id in jobs}
            if statuses - {"running", "succeeded", "failed", "cancelled"}:
                return None
            return now if statuses != {"running"} or now["figures"]["request_rate"] else None

        sharing = platform.wait_for("both jobs to score through the service", both_scoring, timeout=240)
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        (ARTIFACTS / "services.json").write_text(json.dumps(sharing, indent=2))
        screenshot_services_page(platform, service_id)

        for job_id in jobs:
            done = platform.wait_status(job_id, ("succeeded", "failed", "cancelled"), timeout=240)
            assert done["status"] == "succeeded", f"{done['error']}\n{platform.output()}"
            rewards = http.get(f"/api/v1/jobs/{job_id}/metrics", params={"keys": "reward/mean"}).json()["series"]
            assert rewards and rewards[0]["steps"] == [1, 2, 3]

        figures = platform.wait_for(
            "the service's figures to count both jobs' requests",
            lambda: (f := service()["figures"])["requests"] >= 4 and f["latency_p50_s"] is not None and f,
            timeout=30,
        )
        assert figures["images"] >= 2 * 3 * 8 and figures["errors"] == 0

        [killed] = reward_servers(platform, service_id)
        killed.send_signal(signal.SIGKILL)
        restarted = platform.wait_for(
            "the killed server to be restarted",
            lambda: (s := service())["restarts"] == 1 and s["state"] == "healthy" and s,
            timeout=90,
        )
        assert restarted["url"] == healthy["url"], "a restart moved the service to another URL"
        [server] = reward_servers(platform, service_id)

        assert http.post(f"/api/v1/services/{service_id}/stop").status_code == 200
        platform.wait_for("the service to stop", lambda: service()["state"] == "stopped", timeout=60)
        hosts = http.get("/api/v1/hosts").json()["items"]
    ours = next(h for h in hosts if h["name"] == platform.host_name)
    assert not any(d["busy"] for d in ours["devices"]), "the stopped service still holds its device"
    assert not still_alive_after([server], timeout=30), "the stopped service's server is still running"
