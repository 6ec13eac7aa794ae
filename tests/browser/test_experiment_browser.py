"""The experiment pages in Chromium: creating an experiment by clicking through the New experiment form (the
cell count follows the axes as they are typed), and the experiment page's curves drawn per cell group, which
keep the user's zoom and hidden series while a running cell's points arrive."""

from __future__ import annotations

import re

import pytest
from browser_support import Live, PageProbe
from experiment_fixtures import seed_experiment, shared_experiment
from page_fixtures import add_metrics
from playwright.sync_api import expect
from sqlalchemy import select

from server.models import Job

pytestmark = pytest.mark.browser


def test_creating_an_experiment_with_the_form_shows_the_cell_count_live_and_opens_it(
    live: Live, probe: PageProbe
) -> None:
    page = probe.page
    page.goto(f"{live.url}/jobs/{live.world.running.id}")
    page.click("text=New experiment")
    page.wait_for_url(re.compile(r"/experiments/new\?from="))
    assert page.text_content("#cell-count") == "9"  # native, lean_retain, jagg x seeds 1, 2, 3
    page.fill("input[name=name]", "browser sweep")
    page.locator("input[name=axis_values]").nth(1).fill("1, 2")
    expect(page.locator("#cell-count")).to_have_text("6")
    page.click("#add-axis")
    expect(page.locator("input[name=axis_path]")).to_have_count(4)  # 2 axes, the empty row, the one htmx appends
    page.locator("input[name=axis_path]").last.fill("algorithm.group_size")
    page.locator("input[name=axis_values]").last.fill("4, 8")
    expect(page.locator("#cell-count")).to_have_text("12")
    assert page.is_checked("#f-fair")  # on by default: an axis is the executor
    page.locator("input[name=axis_path]").first.fill("")
    page.locator("input[name=axis_values]").first.fill("")
    expect(page.locator("#cell-count")).to_have_text("4")
    expect(page.locator("#f-fair")).not_to_be_checked()  # no executor axis left: off, the server's default
    page.check("#f-fair")
    page.click("button:has-text('Create experiment')")
    page.wait_for_url(re.compile(r"/experiments/\d+$"))
    assert page.text_content("h1") == "browser sweep"
    assert page.locator("#cells-table tbody tr").count() == 4
    probe.shot("experiment-created")
    assert probe.errors == []


def test_the_experiment_page_draws_each_cell_group_with_its_band(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/experiments/{shared_experiment(live.app, live.world.token)}")
    page.wait_for_selector("#experiment-chart-1 .uplot")
    assert page.get_attribute("#experiment-chart-1", "data-groups") == "2"
    labels = page.locator("#experiment-chart-1 .u-legend th").all_text_contents()
    assert any("native (mean of 2)" in label for label in labels)
    assert any("lean_retain (mean of 2)" in label for label in labels)
    assert probe.errors == []


def test_a_live_experiment_s_charts_gain_points_keeping_the_zoom_and_hidden_series(
    live: Live, probe: PageProbe
) -> None:
    experiment_id = seed_experiment(live.app, live.world.token, finished=False, name="live zoom")
    with live.app.state.sessionmaker() as session:
        job = session.scalars(select(Job).where(Job.experiment_id == experiment_id).order_by(Job.id)).first()
        assert job is not None
        job.status, job.total_steps = "running", 40
        add_metrics(session, job, range(0, 20))
        session.commit()
        job_id = job.id
    page = probe.page
    page.goto(f"{live.url}/experiments/{experiment_id}")
    chart = "#experiment-chart-1"
    page.wait_for_function(f"() => document.querySelector('{chart}').dataset.lastStep === '19'")
    probe.drag_zoom(chart)
    assert page.get_attribute(chart, "data-zoomed") == "true"
    probe.toggle_series(chart, 1)
    expect(page.locator(f"{chart} .u-legend .u-series.u-off")).to_have_count(1)

    with live.app.state.sessionmaker() as session:
        add_metrics(session, session.get(Job, job_id), range(20, 30))
        session.commit()
    page.wait_for_function(f"() => document.querySelector('{chart}').dataset.lastStep === '29'", timeout=15000)
    assert page.get_attribute(chart, "data-zoomed") == "true"
    assert page.locator(f"{chart} .u-legend .u-series.u-off").count() == 1
    assert probe.errors == []
