"""The committed acceptance report (docs/examples/experiment-report.html, exported by `sfumato experiment
export` from a 3-executor x 3-seed run of the shapes demo) opens in Chromium with every request other than
data: refused, and shows its tables, plots and sample images."""

from __future__ import annotations

from pathlib import Path

import pytest

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
    assert page.locator("table").first.locator("tbody tr").count() == 3
    assert page.locator("svg").count() == 2
    images = page.locator(".gallery img")
    assert images.count() >= 3
    widths = images.evaluate_all("imgs => imgs.map(i => i.complete ? i.naturalWidth : 0)")
    assert all(w > 0 for w in widths)
    assert blocked == []
    context.close()
