"""The audited cosine beside a class-A executor's speedup, in Chromium at 1280 and 1920 px: under the speedup on
the compare page and in the experiment summary, and beside samples/s on the job page, in view with nothing cut
off."""

from __future__ import annotations

import pytest
from browser_support import SCREENSHOTS, Live
from experiment_fixtures import seed_experiment
from page_fixtures import add_metrics, make_job
from sqlalchemy import select

from server.models import Job, User
from server.services import metric_blocks
from trainer.spec.ingest import MetricStep

pytestmark = pytest.mark.browser

AUDIT = {"audit/cosine": 0.9912345, "audit/rel_l2": 0.1309, "audit/failed": 0.0}
NOTE = """(selector) => [...document.querySelectorAll(selector)].map((el) => {
  const r = el.getBoundingClientRect();
  return { text: el.innerText.trim(), inView: r.width > 0 && r.left >= 0 && r.right <= window.innerWidth,
           clipped: el.scrollWidth > el.clientWidth + 1 };
})"""


def audited(live: Live, job_ids: list[int]) -> None:
    """Each job's first-step audit figures at step 1."""
    with live.app.state.sessionmaker() as session:
        for job_id in job_ids:
            audit = [MetricStep(step=1, wall_time=1_732_870_000.0, values=AUDIT)]
            metric_blocks.store(session, job_id, 1, metric_blocks.BatchPoints.of_steps(audit)[0])
        session.commit()


def three_executors(live: Live) -> list[int]:
    """native, lean_retain and jagg on one spec; jagg with its first-step audit."""
    with live.app.state.sessionmaker() as session:
        owner = session.get(User, live.world.admin.id)
        ids = []
        for executor, speed in (("native", 1.0), ("lean_retain", 1.25), ("jagg", 1.3)):
            job = make_job(session, owner, None, f"sd3-k9/{executor}", executor, status="succeeded", attempt=1,
                           step=30)  # fmt: skip
            add_metrics(session, job, range(1, 31), speed=speed)
            ids.append(job.id)
        session.commit()
    audited(live, ids[2:])
    return ids


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_audited_cosine_sits_beside_the_speedup_on_the_compare_and_job_pages(
    live: Live, browser: object, login_state: str, width: int
) -> None:
    ids = three_executors(live)
    context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.goto(f"{live.url}/compare?" + "&".join(f"job={i}" for i in ids))
    page.wait_for_selector("table.compare-summary")
    compared = page.evaluate(NOTE, f'tr[data-job="{ids[2]}"] td.speedup .audited-cosine')
    others = page.evaluate(NOTE, f'tr[data-job="{ids[0]}"] .audited-cosine, tr[data-job="{ids[1]}"] .audited-cosine')
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOTS / f"compare-audited-cosine-{width}.png"), full_page=True)
    page.goto(f"{live.url}/jobs/{ids[2]}")
    page.wait_for_selector("#job-header")
    header = page.evaluate(NOTE, "#job-header dd.audited-cosine")
    page.screenshot(path=str(SCREENSHOTS / f"job-audited-cosine-{width}.png"))
    context.close()
    assert [c["text"] for c in compared] == ["cosine 0.9912 (first-step audit)"] and others == []
    assert [h["text"] for h in header] == ["cosine 0.9912 (first-step audit)"]
    for note in [*compared, *header]:
        assert note["inView"] and not note["clipped"], note
    assert not errors, errors


@pytest.mark.parametrize("width", [1280, 1920])
def test_the_experiment_summary_shows_the_class_a_group_s_audited_cosine_beside_its_speedup(
    live: Live, browser: object, login_state: str, width: int
) -> None:
    experiment = seed_experiment(live.app, live.world.token, name=f"audited-{width}", executors=["native", "jagg"])
    with live.app.state.sessionmaker() as session:
        jagg = select(Job.id).where(Job.experiment_id == experiment, Job.executor == "jagg")
        audited(live, list(session.scalars(jagg)))
    context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.goto(f"{live.url}/experiments/{experiment}")
    page.wait_for_selector("#summary-table")
    notes = page.evaluate(NOTE, "#summary-table td.speedup .audited-cosine")
    page.locator("#summary-table").scroll_into_view_if_needed()
    page.screenshot(path=str(SCREENSHOTS / f"experiment-audited-cosine-{width}.png"), full_page=True)
    context.close()
    assert [n["text"] for n in notes] == ["cosine 0.9912 (first-step audit, 2 of 2 seeds)"]
    assert notes[0]["inView"] and not notes[0]["clipped"], notes
    assert not errors, errors
