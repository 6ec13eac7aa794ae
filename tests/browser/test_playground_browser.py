"""The playground page in Chromium at 1280 and 1920 px: typing prompts and seeds and clicking Draw queues a run that
the page shows drawing (and polls), with nothing overlapping or overflowing sideways; saved under
test-artifacts/screenshots."""

from __future__ import annotations

import pytest
from browser_support import SCREENSHOTS, Live
from test_layout_browser import CHECK_LAYOUT, VIEWPORTS

from server.models import Artifact

pytestmark = pytest.mark.browser


def with_checkpoint(live: Live) -> int:
    job_id = live.world.running.id
    with live.app.state.sessionmaker() as session:
        if not session.query(Artifact).filter_by(job_id=job_id, kind="checkpoint", step=10).count():
            session.add(Artifact(job_id=job_id, attempt=1, kind="checkpoint", name="step-10", step=10,
                                 path="checkpoints/step-10"))  # fmt: skip
            session.commit()
    return job_id


@pytest.mark.parametrize(("width", "height"), VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_draw_queues_a_run_the_page_shows_drawing_with_nothing_overlapping(
    live: Live, browser: object, login_state: str, width: int, height: int
) -> None:
    job_id = with_checkpoint(live)
    context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.goto(f"{live.url}/jobs/{job_id}/playground")
    page.fill("#f-prompts", "a large white circle in the center on a blue background\na small red square")
    page.fill("#f-seeds", "0, 1")
    page.select_option("#f-step", "10")
    page.fill("#f-guidance", "3")
    page.click("#playground-submit")
    page.wait_for_selector(".playground-run .playground-waiting")
    polling = page.get_attribute("#playground-runs", "hx-trigger")
    problems = page.evaluate(CHECK_LAYOUT)
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"playground-{width}.png"), full_page=True)
    context.close()
    assert polling == "every 2s"
    assert problems == [] and errors == []
