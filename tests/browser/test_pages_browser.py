"""Every page in a real Chromium: no console errors, live updates without reloads, and a screenshot of each."""

from __future__ import annotations

import pytest
from browser_support import Live, PageProbe
from page_fixtures import add_metrics, make_job
from playwright.sync_api import expect
from sqlalchemy import select

from server.models import Job, LogLine, RewardService, User

pytestmark = pytest.mark.browser


def test_login_page(live: Live, browser: object) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{live.url}/jobs")
    assert "/login" in page.url
    PageProbe(page, []).shot("login")
    context.close()


def test_jobs_page_refreshes_rows_live(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/jobs")
    page.wait_for_selector("#job-rows tr")
    page.check(f"input[name=job][value='{live.world.finished[0].id}']")
    with live.app.state.sessionmaker() as session:
        job = session.get(Job, live.world.queued[0].id)
        job.name = "renamed-while-watching"
        session.commit()
    page.wait_for_selector("text=renamed-while-watching", timeout=6000)
    assert page.is_checked(f"input[name=job][value='{live.world.finished[0].id}']"), "a poll unticked a compare box"
    probe.shot("jobs")
    assert probe.errors == []


def test_submit_shows_inline_errors_then_creates_the_job(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/submit")
    page.fill("[name='name']", "from-the-browser")
    page.select_option("[name='resources.device_type']", "cuda")
    page.fill("[name='algorithm.group_size']", "1")
    probe.shot("submit")
    page.click("#submit-form button[type=submit]")
    error = page.wait_for_selector("#e-algorithm\\.group_size")
    assert "greater than or equal to 2" in error.inner_text()
    assert page.get_attribute("[name='algorithm.group_size']", "aria-invalid") == "true"
    probe.shot("submit-errors")
    with live.app.state.sessionmaker() as session:
        assert session.scalar(select(Job).where(Job.name == "from-the-browser")) is None
    page.fill("[name='algorithm.group_size']", "4")
    page.click("#submit-form button[type=submit]")
    page.wait_for_url("**/jobs/*")
    assert page.inner_text("h1") == "from-the-browser"
    # The refused POST answers 422 (the form again, with the messages); Chromium logs that status, nothing else.
    assert [e for e in probe.errors if "/submit" not in e and "status of 422" not in e] == []


def test_job_chart_gains_points_without_reload(live: Live, probe: PageProbe) -> None:
    page = probe.page
    job = live.world.running
    page.goto(f"{live.url}/jobs/{job.id}")
    page.wait_for_selector("#chart-reward .uplot")
    page.wait_for_selector("#chart-time .uplot")
    probe.shot("job-running")
    page.evaluate("window.__notReloaded = true")
    before = page.locator("#chart-reward .u-legend").count()
    assert before == 1
    with live.app.state.sessionmaker() as session:
        add_metrics(session, session.get(Job, job.id), range(30, 45))
        session.commit()
    assert page.get_attribute("#chart-reward", "data-last-step") == "29"
    # The user zooms into steps ~5..15 and hides one series; live appends must keep both.
    probe.drag_zoom("#chart-reward")
    assert page.get_attribute("#chart-reward", "data-zoomed") == "true"
    labels = page.locator("#chart-reward .u-legend .u-series .u-label").all_inner_texts()
    probe.toggle_series("#chart-reward", labels.index("reward/brightness"))
    hidden = "#chart-reward .u-legend .u-series.u-off:has-text('reward/brightness')"
    expect(page.locator(hidden)).to_have_count(1)
    # The chart grows to the new last step (44) while the page stays the same document.
    page.wait_for_function("() => document.querySelector('#chart-reward').dataset.lastStep === '44'", timeout=10000)
    assert page.evaluate("window.__notReloaded") is True
    assert page.get_attribute("#chart-reward", "data-zoomed") == "true"
    assert page.locator(hidden).count() == 1
    assert probe.errors == []


def test_finished_job_page_in_dark_mode_stops_polling(live: Live, probe: PageProbe) -> None:
    job_id = live.world.finished[0].id
    polls: list[str] = []
    probe.page.on("request", lambda r: polls.append(r.url) if f"/jobs/{job_id}/" in r.url else None)
    probe.page.emulate_media(color_scheme="dark")
    probe.page.goto(f"{live.url}/jobs/{job_id}")
    probe.page.wait_for_selector("#chart-reward .uplot")
    probe.page.wait_for_selector("#charts[data-polling='false']")
    loaded = len(polls)
    probe.page.wait_for_timeout(3500)  # longer than any poll interval (2 s header and logs, 3 s charts)
    assert polls[loaded:] == [], "a finished job's page kept polling"
    probe.shot("job-finished-dark")
    probe.page.click("[data-theme-toggle]")
    assert probe.page.get_attribute("html", "data-theme") == "light"
    probe.page.wait_for_selector("#chart-reward .uplot")
    probe.shot("job-finished")
    assert probe.errors == []


def test_gallery_slider_changes_images(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/jobs/{live.world.running.id}/gallery")
    page.wait_for_selector("#gallery-grid img")
    page.wait_for_function("() => [...document.querySelectorAll('#gallery-grid img')].every(i => i.naturalWidth > 0)")
    probe.shot("gallery")
    before = page.get_attribute("#gallery-grid .cell.current img", "src")
    page.locator("#step-slider").fill("0")
    page.wait_for_function(
        "before => document.querySelector('#gallery-grid .cell.current img').getAttribute('src') !== before",
        arg=before,
    )
    assert page.get_attribute("#gallery-grid", "data-current-step") == "0"
    page.click("#gallery-grid .cell.current a[data-lightbox]")
    page.wait_for_selector("dialog#lightbox[open]")
    probe.shot("gallery-lightbox")
    assert probe.errors == []


def test_compare_draws_one_line_per_job(live: Live, probe: PageProbe) -> None:
    page = probe.page
    ids = [live.world.running.id, *(j.id for j in live.world.finished)]
    page.goto(f"{live.url}/compare?" + "&".join(f"job={i}" for i in ids))
    page.wait_for_selector("#compare-1 .uplot")
    labels = page.locator("#compare-1 .u-legend .u-series .u-label").all_inner_texts()
    assert len(labels) == 1 + len(ids)  # the x column plus one line per job
    assert "speedup" in page.inner_text(".compare-summary").lower()
    for image in page.locator("#compare-gallery img").all():  # lazy images load once near the viewport
        image.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => [...document.querySelectorAll('#compare-gallery img')].every(i => i.naturalWidth > 0)"
    )
    probe.shot("compare")
    before = page.get_attribute("#compare-gallery img", "src")
    page.locator("#compare-slider").fill("0")
    page.wait_for_function(
        "before => document.querySelector('#compare-gallery img').getAttribute('src') !== before", arg=before
    )
    assert page.get_attribute("#compare-gallery", "data-current-step") == "0"
    page.check("#compare-axis input[value=time]")
    page.wait_for_selector("#compare-1 .u-legend >> text=wall time")
    assert probe.errors == []


def test_hosts_page(live: Live, probe: PageProbe) -> None:
    probe.page.goto(f"{live.url}/hosts")
    probe.page.wait_for_selector("text=gpu-node-1")
    probe.shot("hosts")
    assert probe.errors == []


def test_a_service_created_in_the_new_service_panel_is_listed_then_stopped_after_confirming(
    live: Live, probe: PageProbe
) -> None:
    page = probe.page
    asked = probe.answer_dialogs(accept=True)
    page.goto(f"{live.url}/services")
    page.click("#new-service summary")
    page.fill("#f-name", "bright-browser")
    page.select_option("#f-reward", "brightness")
    page.click("#service-form button[type=submit]")
    row = page.wait_for_selector("tr:has-text('bright-browser')")
    assert row.query_selector(".status-pending") is not None
    row.query_selector("button:has-text('Stop')").click()  # type: ignore[union-attr]
    page.wait_for_selector("tr:has-text('bright-browser') .status-stopped")
    assert len(asked) == 1 and asked[0].startswith("Stop service bright-browser (#")
    assert page.locator("tr:has-text('bright-browser') button:has-text('Stop')").count() == 0
    assert probe.errors == []


def test_a_service_stop_that_comes_too_late_shows_why_in_the_table(live: Live, probe: PageProbe) -> None:
    page = probe.page
    probe.answer_dialogs(accept=True)
    with live.app.state.sessionmaker.begin() as session:
        stale = RewardService(
            name="stopped-elsewhere",
            team_id=live.world.running.team_id,
            reward="brightness",
            device_type="cuda",
            devices=1,
            state="pending",
            created_by_id=live.world.admin.id,
        )
        session.add(stale)
        session.flush()
        stale_id = stale.id
    page.goto(f"{live.url}/services")
    with live.app.state.sessionmaker.begin() as session:
        session.get(RewardService, stale_id).state = "stopped"  # type: ignore[union-attr]
    page.click(f"#service-{stale_id} button:has-text('Stop')")
    refusal = page.wait_for_selector("#service-refusal").inner_text()
    assert refusal == f"Service #{stale_id} was not stopped: service 'stopped-elsewhere' is already stopped"
    assert page.locator(f"#service-{stale_id} .status-stopped").count() == 1
    assert all("409" in e for e in probe.errors), probe.errors


def test_unknown_job_is_a_404_page(live: Live, probe: PageProbe) -> None:
    response = probe.page.goto(f"{live.url}/jobs/987654")
    assert response is not None and response.status == 404
    probe.shot("not-found")


def test_first_log_lines_replace_the_empty_placeholder(live: Live, probe: PageProbe) -> None:
    job_id = live.world.queued[1].id
    probe.page.goto(f"{live.url}/jobs/{job_id}")
    probe.page.wait_for_selector("#log-empty")
    with live.app.state.sessionmaker() as session:
        session.add(LogLine(job_id=job_id, attempt=0, text="scheduler: waiting for 1 cuda device"))
        session.commit()
    probe.page.wait_for_selector("#log-box .log-line >> text=waiting for 1 cuda device", timeout=8000)
    assert probe.page.locator("#log-empty").count() == 0
    assert probe.errors == []


def test_job_charts_draw_the_last_points_then_stop_once_the_job_finished(live: Live, probe: PageProbe) -> None:
    with live.app.state.sessionmaker() as session:
        owner = session.get_one(User, live.world.admin.id)
        job = make_job(session, owner, None, "finishes-while-watched", "native", status="running")
        add_metrics(session, job, range(0, 10))
        session.commit()
        job_id = job.id
    page = probe.page
    page.goto(f"{live.url}/jobs/{job_id}")
    page.wait_for_selector("#chart-reward .uplot")
    assert page.get_attribute("#charts", "data-polling") == "true"
    with live.app.state.sessionmaker() as session:
        job = session.get_one(Job, job_id)
        add_metrics(session, job, range(10, 20))
        job.status = "succeeded"
        session.commit()
    page.wait_for_selector("#charts[data-polling='false']", timeout=15000)
    assert page.get_attribute("#chart-reward", "data-last-step") == "19"
    assert probe.errors == []
