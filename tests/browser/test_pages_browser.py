"""Every page in a real Chromium: no console errors, live updates, and a screenshot of each."""

from __future__ import annotations

import pytest
from browser_support import Live, PageProbe

pytestmark = pytest.mark.browser


def test_jobs_page(live: Live, probe: PageProbe) -> None:
    probe.page.goto(f"{live.url}/jobs")
    probe.page.wait_for_selector("#job-rows tr")
    probe.shot("jobs")
    assert probe.errors == []


def test_job_page(live: Live, probe: PageProbe) -> None:
    probe.page.goto(f"{live.url}/jobs/{live.world.running.id}")
    probe.page.wait_for_selector("#chart-reward .uplot")
    probe.shot("job-running")
    assert probe.errors == []


def test_submit(live: Live, probe: PageProbe) -> None:
    probe.page.goto(f"{live.url}/submit")
    probe.shot("submit")
    probe.page.fill("[name='algorithm.group_size']", "1")
    probe.page.click("#submit-form button[type=submit]")
    probe.page.wait_for_selector("#e-algorithm\\.group_size")
    probe.shot("submit-errors")
    assert probe.errors == [] or all("422" in e for e in probe.errors)
