"""The gallery pins the base model's samples (step 0, logged before training) as a "before" column, wherever the
step slider is."""

from __future__ import annotations

import pytest
from browser_support import SCREENSHOTS, Live

pytestmark = pytest.mark.browser

VIEWPORTS = [(1280, 800), (1920, 1080)]


def column_heads(page: object) -> list[str]:
    return [t.strip() for t in page.locator("#gallery-grid .col-head").all_inner_texts()][1:]  # type: ignore[attr-defined]


def all_images_loaded(page: object) -> None:
    page.wait_for_function(  # type: ignore[attr-defined]
        "() => [...document.querySelectorAll('#gallery-grid img')].every(i => i.complete && i.naturalWidth > 0)"
    )


@pytest.mark.parametrize(("width", "height"), VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_the_gallery_shows_a_before_column_of_step_0_beside_the_slider_s_window(
    live: Live, browser: object, login_state: str, width: int, height: int
) -> None:
    context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{live.url}/jobs/{live.world.running.id}/gallery")  # eval samples at steps 0, 5, ..., 25
    page.wait_for_selector("#gallery-grid img")
    all_images_loaded(page)
    # The slider starts at the last step: its window is 5..25, and step 0 comes first, as "before".
    assert column_heads(page) == ["before · step 0", "step 5", "step 10", "step 15", "step 20", "step 25"]
    before_cells = page.locator("#gallery-grid .cell.before")
    prompts = page.locator("#gallery-grid .row-head").count()
    assert before_cells.count() == prompts and page.locator("#gallery-grid .cell.before img").count() == 2 * prompts
    box = page.locator("#gallery-grid .col-head.before").bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"gallery-before-{width}.png"), full_page=True)

    page.locator("#step-slider").fill("2")  # step 10: the window starts at 0, which stays the one "before" column
    page.wait_for_function("() => document.querySelector('#gallery-grid').dataset.currentStep === '10'")
    assert column_heads(page) == ["before · step 0", "step 5", "step 10", "step 15", "step 20"]
    context.close()
