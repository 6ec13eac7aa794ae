"""`sfumato service create` on a CPU-only platform (live server, Celery worker with CPU slots, scheduler, a real
reward server): without `--device-type` the service lands on a CPU slot and becomes healthy; `--device-type cuda`
is refused with one line naming the field and what the hosts offer, and nothing is stored."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from client_harness import cli_env, run_cli
from platform_harness import Platform

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def env(live_platform: Platform, tmp_path: Path) -> dict[str, str]:
    return cli_env(live_platform, tmp_path)


def sfumato_json(env: dict[str, str], *args: str) -> Any:
    """The command's `--json` answer; it must succeed."""
    result = run_cli(env, *args, "--json")
    assert result.returncode == 0, f"{args}: exit {result.returncode}\n{result.stderr}"
    return json.loads(result.stdout)


def platform_device_types(platform: Platform) -> set[str]:
    """The device types of the platform's worker, once it has registered."""

    def registered() -> list[dict[str, Any]]:
        with platform.client() as http:
            hosts = http.get("/api/v1/hosts").json()["items"]
        return [h for h in hosts if h["name"] == platform.host_name]

    (host,) = platform.wait_for("the worker to register", registered)
    return {device["device_type"] for device in host["devices"]}


def service(platform: Platform, service_id: int) -> dict[str, Any]:
    with platform.client() as http:
        return dict(http.get(f"/api/v1/services/{service_id}").json())


def test_a_service_created_with_the_defaults_runs_on_a_cpu_slot(live_platform: Platform, env: dict[str, str]) -> None:
    if platform_device_types(live_platform) != {"cpu"}:
        pytest.skip("the worker offers GPUs here: not a CPU-only platform")
    created = sfumato_json(env, "service", "create", "bright-default", "--reward", "brightness")
    assert (created["device_type"], created["devices"], created["state"]) == ("cpu", 1, "pending")
    try:
        healthy = live_platform.wait_for(
            "the service to be healthy", lambda: service(live_platform, created["id"])["state"] == "healthy"
        )
        assert healthy
    finally:
        assert run_cli(env, "service", "stop", str(created["id"])).returncode == 0


def test_cuda_on_a_cpu_only_platform_is_refused_with_one_line_naming_the_field(
    live_platform: Platform, env: dict[str, str]
) -> None:
    if platform_device_types(live_platform) != {"cpu"}:
        pytest.skip("the worker offers GPUs here: not a CPU-only platform")
    result = run_cli(env, "service", "create", "bright-cuda", "--reward", "brightness", "--device-type", "cuda")
    assert result.returncode == 1 and result.stdout == "" and "Traceback" not in result.stderr
    assert result.stderr.strip() == (
        "error: device_type: no registered host offers cuda devices; offered: cpu (up to 3 on one host)"
    ), result.stderr
    assert "bright-cuda" not in [s["name"] for s in sfumato_json(env, "service", "list")]
