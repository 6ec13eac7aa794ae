"""Safe clicks on every page at 1280x800 and 1920x1080: no two clickable elements overlap, nothing overflows
sideways (tables included), and the element at each button's centre is that button. Also saves the compare and
advice pages, and the services page with its New service panel open, at both sizes under
test-artifacts/screenshots, and with SFUMATO_UPDATE_README_IMAGES=1 the README's docs/images/compare.png (1280
wide)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from browser_support import SCREENSHOTS, Live, PageProbe
from experiment_fixtures import shared_experiment

pytestmark = pytest.mark.browser

VIEWPORTS = [(1280, 800), (1920, 1080)]
README_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "images"

# Every page, by a path built from the test world.
PAGES: dict[str, Callable[[Live], str]] = {
    "jobs": lambda live: "/jobs",
    "job running": lambda live: f"/jobs/{live.world.running.id}",
    "job failed": lambda live: f"/jobs/{live.world.hostile.id}" if live.world.hostile else "/jobs",
    "job queued": lambda live: f"/jobs/{live.world.queued[0].id}",
    "gallery": lambda live: f"/jobs/{live.world.running.id}/gallery",
    "submit": lambda live: "/submit",
    "submit json": lambda live: "/submit?mode=json",
    "compare picker": lambda live: "/compare",
    "compare": lambda live: "/compare?" + "&".join(f"job={j.id}" for j in [live.world.running, *live.world.finished]),
    "experiment": lambda live: f"/experiments/{shared_experiment(live.app, live.world.token)}",
    "experiments": lambda live: "/experiments",
    "experiment new": lambda live: f"/experiments/new?from={live.world.running.id}",
    "advice": lambda live: f"/advice/{live.world.advice.id}" if live.world.advice else "/jobs",
    "job from advice": lambda live: f"/jobs/{live.world.finished[0].id}",
    "hosts": lambda live: "/hosts",
    "services": lambda live: "/services",
    "settings": lambda live: "/settings",
    "teams": lambda live: "/teams",
    "team": lambda live: "/teams/1",
    "team audit": lambda live: "/teams/1/audit",
    "users": lambda live: "/admin/users",
    "not found": lambda live: "/jobs/987654",
}

SCREENSHOT_PAGES = ("compare", "advice", "job from advice")  # saved at both sizes under test-artifacts/screenshots

# Runs in the page: the problems it finds, as sentences.
CHECK_LAYOUT = """() => {
  const problems = [];
  const width = document.documentElement.clientWidth;
  if (document.documentElement.scrollWidth > width + 1) {
    problems.push(`page scrolls sideways: ${document.documentElement.scrollWidth}px in ${width}px`);
  }
  for (const wrap of document.querySelectorAll(".table-wrap, table, pre, .charts")) {
    if (wrap.closest("details:not([open])") || wrap.closest("[hidden]")) continue;
    if (wrap.scrollWidth > wrap.clientWidth + 1 && !wrap.matches("pre")) {
      problems.push(`${describe(wrap)} overflows sideways: ${wrap.scrollWidth}px in ${wrap.clientWidth}px`);
    }
  }
  const clickable = [...document.querySelectorAll(
    "a[href], button, input:not([type=hidden]), select, textarea, summary, [role=button]"
  )].filter(visible);
  for (let i = 0; i < clickable.length; i++) {
    for (let j = i + 1; j < clickable.length; j++) {
      const a = clickable[i], b = clickable[j];
      if (a.contains(b) || b.contains(a)) continue;
      const r = a.getBoundingClientRect(), s = b.getBoundingClientRect();
      const x = Math.min(r.right, s.right) - Math.max(r.left, s.left);
      const y = Math.min(r.bottom, s.bottom) - Math.max(r.top, s.top);
      if (x > 1 && y > 1) problems.push(`${describe(a)} overlaps ${describe(b)}`);
    }
  }
  for (const button of clickable.filter((e) => e.matches("button, [role=button], input[type=submit]"))) {
    button.scrollIntoView({block: "center", inline: "center"});
    const r = button.getBoundingClientRect();
    const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    if (!hit || !(hit === button || button.contains(hit))) {
      problems.push(`the centre of ${describe(button)} is ${hit ? describe(hit) : "nothing"}`);
    }
  }
  window.scrollTo(0, 0);
  return problems;

  function visible(e) {
    if (e.closest("details:not([open]) > :not(summary)") || e.closest("[hidden], dialog:not([open])")) return false;
    const r = e.getBoundingClientRect();
    const style = getComputedStyle(e);
    return r.width > 0 && r.height > 0 && style.visibility !== "hidden" && style.display !== "none";
  }
  function describe(e) {
    const text = (e.innerText || e.value || e.getAttribute("aria-label") || "").trim().slice(0, 30);
    return `<${e.tagName.toLowerCase()}${e.id ? "#" + e.id : ""}${e.className && typeof e.className === "string" ?
      "." + e.className.trim().split(/\\s+/).join(".") : ""}> "${text}"`;
  }
}"""


@pytest.mark.parametrize(("width", "height"), VIEWPORTS, ids=[f"{w}x{h}" for w, h in VIEWPORTS])
def test_no_clickable_overlaps_no_sideways_overflow_and_every_button_is_what_its_centre_hits(
    live: Live, browser: object, login_state: str, width: int, height: int
) -> None:
    context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
    page = context.new_page()
    problems: list[str] = []
    for name, path in PAGES.items():
        page.goto(live.url + path(live))
        page.wait_for_load_state("networkidle")
        problems += [f"{name} ({path(live)}): {p}" for p in page.evaluate(CHECK_LAYOUT)]
        if name.startswith("experiment"):
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{name.replace(' ', '-')}-{width}.png"), full_page=True)
        if name == "services":  # again with the New service panel and a service's facts open
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.click("#new-service summary")
            page.click("#service-1 summary")
            problems += [f"{name} with New service open: {p}" for p in page.evaluate(CHECK_LAYOUT)]
            page.screenshot(path=str(SCREENSHOTS / f"services-{width}.png"))
        if name in SCREENSHOT_PAGES:
            SCREENSHOTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(SCREENSHOTS / f"{name.replace(' ', '-')}-{width}.png"))
            readme = name == "compare" and width == 1280 and os.environ.get("SFUMATO_UPDATE_README_IMAGES")
            if readme:  # the README's, on request
                page.screenshot(path=str(README_IMAGES / "compare.png"))
    context.close()
    assert not problems, "\n".join(problems)


def test_removing_a_member_asks_first_and_dismissing_keeps_them(live: Live, probe: PageProbe) -> None:
    page = probe.page
    asked = probe.answer_dialogs(accept=False)
    page.goto(f"{live.url}/teams/1")
    page.click("tr:has-text('bob') button:has-text('Remove')")
    assert asked == ["Remove bob from team vision? They lose access to its jobs."]
    page.reload()
    assert page.locator("tbody tr:has-text('bob')").count() == 1
    assert probe.errors == []
