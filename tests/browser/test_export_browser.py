"""The job page's Exports section in a browser: choosing a format and a checkpoint and clicking Export queues an
export job listed in the section; the section lays out at 1280 and 1920 px (saved under
test-artifacts/screenshots)."""

from __future__ import annotations

import pytest
from browser_support import SCREENSHOTS, Live, PageProbe
from test_layout_browser import CHECK_LAYOUT, VIEWPORTS
from test_model_registry_browser import add_checkpoints

pytestmark = pytest.mark.browser


def test_export_a_checkpoint_by_clicking_and_see_it_listed(
    live: Live, probe: PageProbe, browser: object, login_state: str
) -> None:
    job_id = live.world.running.id
    add_checkpoints(live, [30, 60])
    page = probe.page
    page.goto(f"{live.url}/jobs/{job_id}")  # type: ignore[attr-defined]
    page.select_option("form.export-form select[name=format]", "comfyui")  # type: ignore[attr-defined]
    page.select_option("form.export-form select[name=step]", "30")  # type: ignore[attr-defined]
    page.click("form.export-form button:has-text('Export')")  # type: ignore[attr-defined]
    page.wait_for_url(f"{live.url}/jobs/{job_id}#exports")  # type: ignore[attr-defined]
    row = page.locator("#exports tbody tr").first  # type: ignore[attr-defined]
    assert row.inner_text().split("\t")[1:4] == ["comfyui", "30", "queued"]
    assert probe.errors == []

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for width, height in VIEWPORTS:
        context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
        sized = context.new_page()
        sized.goto(f"{live.url}/jobs/{job_id}")
        sized.wait_for_load_state("networkidle")
        problems += [f"job page at {width}: {p}" for p in sized.evaluate(CHECK_LAYOUT)]
        sized.locator("#exports").screenshot(path=str(SCREENSHOTS / f"job-exports-{width}.png"))
        context.close()
    assert problems == []
