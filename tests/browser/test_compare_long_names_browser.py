"""At 1280 px the compare table keeps every column in view when job names are long: a name wraps within its
cell (its full text in the link's title), the eval-reward and duration columns stay visible, and the charts'
legends cut the name short."""

from __future__ import annotations

import pytest
from browser_support import SCREENSHOTS, Live
from page_fixtures import add_metrics, make_job

from server.models import User

pytestmark = pytest.mark.browser

LONG = "sd3-brightness-sweep-with-a-very-long-descriptive-name-that-users-really-write/lean_retain,seed=1,lr=0.0001"
VIEWPORTS = [(1280, 800), (1920, 1080)]

# Each column's header and cells inside the viewport and their table, and nothing in the table clipped sideways.
CHECK = """(width) => {
  const table = document.querySelector("table.compare-summary");
  const wrap = table.closest(".table-wrap");
  const heads = [...table.querySelectorAll("thead th")].map((th) => th.innerText.trim().toLowerCase());
  const out = { heads, overflow: wrap.scrollWidth - wrap.clientWidth, outside: [] };
  for (const cell of table.querySelectorAll("th, td")) {
    const r = cell.getBoundingClientRect();
    if (r.left < 0 || r.right > Math.min(width, wrap.getBoundingClientRect().right) + 1) {
      out.outside.push(cell.innerText.trim().slice(0, 30) + ` (${Math.round(r.left)}..${Math.round(r.right)})`);
    }
  }
  const eval_ = heads.findIndex((h) => h.startsWith("eval reward"));
  const duration = heads.findIndex((h) => h.startsWith("duration"));
  out.visible = [eval_, duration].map((i) => {
    const r = table.querySelectorAll("thead th")[i].getBoundingClientRect();
    return i >= 0 && r.width > 20 && r.right <= width;
  });
  out.titles = [...table.querySelectorAll("tbody td.job-name a")].map((a) => a.title);
  return out;
}"""


def long_named_jobs(live: Live) -> list[int]:
    with live.app.state.sessionmaker() as session:
        owner = session.get(User, live.world.admin.id)
        ids = []
        for executor, speed in (("native", 1.0), ("lean_retain", 1.5), ("lean_reweight", 1.3)):
            job = make_job(session, owner, None, f"{LONG}-{executor}", executor, status="succeeded", attempt=1, step=12)
            add_metrics(session, job, range(0, 12), speed=speed)
            ids.append(job.id)
        session.commit()
    return ids


@pytest.mark.parametrize(("width", "height"), VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_long_names_wrap_and_the_eval_reward_and_duration_columns_stay_visible(
    live: Live, browser: object, login_state: str, width: int, height: int
) -> None:
    ids = long_named_jobs(live)
    context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{live.url}/compare?" + "&".join(f"job={i}" for i in ids))
    page.wait_for_selector("table.compare-summary")
    found = page.evaluate(CHECK, width)
    page.wait_for_selector("#compare-1 .uplot")
    legend = page.locator("#compare-1 .u-legend .u-series .u-label").all_inner_texts()[1:]
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"compare-long-names-{width}.png"), full_page=True)
    context.close()
    assert found["visible"] == [True, True], found["heads"]
    assert found["overflow"] <= 1 and found["outside"] == [], found
    assert found["titles"] == [f"{LONG}-{e}" for e in ("native", "lean_retain", "lean_reweight")]
    assert all(len(label) <= 40 + len(f"#{ids[-1]}  (lean_reweight)") and "…" in label for label in legend), legend
