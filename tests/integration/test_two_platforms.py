"""Two embedded platforms (`sfumato up`) on one machine, as users run them: each worker exports its own metrics
on a port of its own (the default 9101 goes to whichever takes it first, the other moves to a free port)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import httpx
import pytest
from platform_harness import Platform, prepare
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.slow


def worker_metrics_url(platform: Platform) -> str | None:
    """Where the worker's exporter says it listens, from the platform's output."""
    found = re.findall(
        r"worker metrics at (http://\S+/metrics)", (platform.logs / "up.log").read_text(errors="replace")
    )
    return found[-1] if found else None


def exported_devices(url: str) -> float:
    families = text_string_to_metric_families(httpx.get(url, timeout=10).text)
    return sum(s.value for family in families for s in family.samples if s.name == "sfumato_worker_devices")


def test_two_embedded_platforms_on_one_machine_each_export_their_own_worker_s_metrics(tmp_path: Path) -> None:
    slots = {"first": 2, "second": 3}
    platforms = {name: prepare(tmp_path / name, "", "", None) for name in slots}
    try:
        for name, platform in platforms.items():
            del platform.env["SFUMATO_WORKER_METRICS_PORT"]  # the embedded default
            platform.env["SFUMATO_WORKER_CPU_SLOTS"] = str(slots[name])
            platform.start("up", [sys.executable, "-m", "sfumato.cli", "up", "--port", str(platform.port)])
        urls = {
            name: platform.wait_for(f"the {name} worker's exporter", lambda p=platform: worker_metrics_url(p))
            for name, platform in platforms.items()
        }
        devices = {name: exported_devices(url) for name, url in urls.items()}
    finally:
        for platform in platforms.values():
            platform.stop()
    assert urls["first"] != urls["second"]
    assert devices == slots
