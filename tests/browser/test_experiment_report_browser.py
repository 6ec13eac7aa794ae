"""The committed acceptance report (docs/examples/experiment-report.html, exported by `sfumato experiment
export` from a 2-executor x 2-seed run of the tiny model, docs/examples/README.md) opens in Chromium with every
request other than data: refused, and shows its tables, plots and sample images: every eval prompt whole, an image
per eval seed."""

from __future__ import annotations

from pathlib import Path

import pytest
from browser_support import SCREENSHOTS

pytestmark = pytest.mark.browser

REPORT = Path(__file__).resolve().parents[2] / "docs" / "examples" / "experiment-report.html"


def test_the_exported_report_shows_its_tables_plots_and_images_with_no_network(browser: object) -> None:
    blocked: list[str] = []
    context = browser.new_context(viewport={"width": 1280, "height": 800}, offline=True)  # type: ignore[attr-defined]
    page = context.new_page()

    def refuse_all_but_the_file(route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        if url.startswith(("data:", REPORT.as_uri())):
            route.continue_()  # type: ignore[attr-defined]
        else:
            blocked.append(url)
            route.abort("internetdisconnected")  # type: ignore[attr-defined]

    page.route("**/*", refuse_all_but_the_file)
    page.goto(REPORT.as_uri())
    headers = page.locator("table").first.locator("th").all_inner_texts()
    assert headers[:4] == ["group", "seeds", "samples/s", "speedup vs native"]
    assert page.locator("table").first.locator("tbody tr").count() == 2
    assert page.locator("svg").count() == 2
    prompts = page.locator(".prompt").all_inner_texts()
    assert prompts == ["a red apple", "a blue car", "a green field under a wide open summer sky",
                       "a yellow taxi parked beside a long brick wall at dusk"] * 2  # fmt: skip
    images = page.locator(".gallery img")
    assert images.count() == 2 * len(prompts)  # two eval seeds per prompt
    widths = images.evaluate_all("imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert all(w > 0 for w in widths)
    assert blocked == []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "experiment-report-1280.png"), full_page=True)
    context.close()
