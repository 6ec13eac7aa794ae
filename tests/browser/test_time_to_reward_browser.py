"""The compare page of two methods at 1280 px: the Time to R column in view beside the others, the reward
against running seconds chart drawn from the compare answer with R, and the R field swapping the table."""

from __future__ import annotations

import re

import pytest
from browser_support import SCREENSHOTS, Live
from page_fixtures import add_metrics, make_job

from server.models import User

pytestmark = pytest.mark.browser

TIME_TO_R = """() => {
  const table = document.querySelector("table.compare-summary");
  const heads = [...table.querySelectorAll("thead th")];
  const head = heads.find((th) => th.textContent.trim().startsWith("Time to R"));
  const r = head.getBoundingClientRect();
  return { head: head.textContent.trim(), inView: r.width > 20 && r.right <= window.innerWidth,
           cells: [...table.querySelectorAll("tbody td.time-to-reward")].map((td) => td.innerText.trim()) };
}"""


def two_methods(live: Live) -> list[int]:
    """Flow-GRPO and DanceGRPO under native on one spec, DanceGRPO's steps twice as fast."""
    with live.app.state.sessionmaker() as session:
        owner = session.get(User, live.world.admin.id)
        ids = []
        for algorithm, speed in (("flow_grpo", 1.0), ("dance_grpo", 2.0)):
            name = f"shapes-demo/{algorithm}"
            job = make_job(session, owner, None, name, "native", status="succeeded", attempt=1, step=30,
                           algorithm=algorithm)  # fmt: skip
            add_metrics(session, job, range(1, 31), speed=speed)
            ids.append(job.id)
        session.commit()
    return ids


def test_the_time_to_r_column_and_the_reward_seconds_chart_at_1280_px(
    live: Live, browser: object, login_state: str
) -> None:
    ids = two_methods(live)
    context = browser.new_context(storage_state=login_state, viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.goto(f"{live.url}/compare?" + "&".join(f"job={i}" for i in ids))
    page.wait_for_selector("#reward-seconds-chart .uplot")
    default = page.evaluate(TIME_TO_R)
    legend = page.locator("#reward-seconds-chart .u-legend .u-series .u-label").all_inner_texts()
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / "compare-time-to-reward-1280.png"), full_page=True)
    page.fill("#reward-target-input", "0.5")
    page.click("#reward-target button")
    page.wait_for_selector("#compare-summary[data-reward-target='0.5']")
    named = page.evaluate(TIME_TO_R)
    context.close()
    assert default["inView"], default
    assert all(re.fullmatch(r"\d+\.\d s @\d+", cell) for cell in default["cells"]), default
    assert named["head"] == "Time to R = 0.5" and named["cells"] != default["cells"], named
    assert legend[-1] == "R" and len(legend) == 4, legend
    assert errors == []
