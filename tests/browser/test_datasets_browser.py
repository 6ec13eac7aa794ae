"""The datasets' pages in a browser: the upload form (opened from its button) sends a text set and an edit set with
its images, a refused upload shows the API's message beside the form, and the edit set's page shows its rows as
thumbnails that load; the pages lay out at 1280 and 1920 px wide (saved under test-artifacts/screenshots; the edit
set's page at 1280 px, dataset-edit-1280.png, was copied to docs/images/datasets.png)."""

from __future__ import annotations

import pytest
from browser_support import SCREENSHOTS, Live, PageProbe
from page_fixtures import png
from test_layout_browser import CHECK_LAYOUT, VIEWPORTS

pytestmark = pytest.mark.browser

EDITS = [
    ("make the apple red", "apple.png", (200, 40, 40)),
    ("turn the sky orange", "sky.png", (240, 140, 30)),
    ("paint the house blue", "house.png", (40, 80, 200)),
    ("give the leaf autumn colours", "leaf.png", (60, 160, 60)),
]


def upload(
    page: object, url: str, name: str, fmt: str, train: tuple[str, bytes], images: list[tuple[str, bytes]]
) -> None:
    page.goto(f"{url}/datasets")  # type: ignore[attr-defined]
    page.click("#upload-dataset summary")  # type: ignore[attr-defined]
    page.fill("#d-name", name)  # type: ignore[attr-defined]
    page.select_option("#d-format", fmt)  # type: ignore[attr-defined]
    page.set_input_files("#d-train", {"name": train[0], "mimeType": "text/plain", "buffer": train[1]})  # type: ignore[attr-defined]
    if images:
        files = [{"name": n, "mimeType": "image/png", "buffer": data} for n, data in images]
        page.set_input_files("#d-images", files)  # type: ignore[attr-defined]
    page.click("#dataset-form button[type=submit]")  # type: ignore[attr-defined]
    page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]


def test_upload_by_clicking_then_see_the_edit_sets_thumbnails(
    live: Live, probe: PageProbe, browser: object, login_state: str
) -> None:
    page = probe.page
    text = b"a red apple on a table\na lighthouse at dusk\na bowl of lemons\n"
    upload(page, live.url, "captions", "text", ("train.txt", text), [])
    assert page.url == f"{live.url}/datasets/captions?team=vision"  # type: ignore[attr-defined]
    rows = "".join(f'{{"prompt": "{p}", "image": "{n}"}}\n' for p, n, _ in EDITS).encode()
    upload(page, live.url, "edit-demo", "edit", ("train.jsonl", rows), [(n, png(c, 96)) for _, n, c in EDITS])
    assert page.url == f"{live.url}/datasets/edit-demo?team=vision"  # type: ignore[attr-defined]
    loaded = page.eval_on_selector_all(".dataset-thumbs img", "imgs => imgs.map(i => i.complete && i.naturalWidth)")  # type: ignore[attr-defined]
    assert loaded == [96, 96, 96, 96]
    assert probe.errors == []

    upload(page, live.url, "signs", "ocr", ("train.txt", b'a sign "Open"\na sign with no text\n'), [])
    refusal = page.locator("#form-errors").inner_text()  # type: ignore[attr-defined]
    assert "train: line 2, column 20: no text in double quotes" in refusal
    probe.errors.clear()  # the refusal's 422 is the page's answer

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for width, height in VIEWPORTS:
        context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
        sized = context.new_page()
        for name, path in (("datasets", "/datasets"), ("dataset-edit", "/datasets/edit-demo?team=vision")):
            sized.goto(live.url + path)
            sized.wait_for_load_state("networkidle")
            problems += [f"{name} at {width}: {p}" for p in sized.evaluate(CHECK_LAYOUT)]
            sized.screenshot(path=str(SCREENSHOTS / f"{name}-{width}.png"), full_page=True)
        context.close()
    assert problems == []
