"""Charts read at a glance: a y-axis label with its unit, units scaled to the range, no repeated tick labels,
a tight axis around a flat series, no empty executor panel for native, and live charts that append the steps
after their own last one."""

from __future__ import annotations

import json

import pytest
from browser_support import Live, PageProbe
from page_fixtures import add_metrics, make_job
from playwright.sync_api import Page

from server.models import Job, User

pytestmark = pytest.mark.browser


def _axis(page: object, selector: str) -> tuple[str, list[str]]:
    label = page.get_attribute(selector, "data-y-label")  # type: ignore[attr-defined]
    ticks = json.loads(page.get_attribute(selector, "data-y-ticks") or "[]")  # type: ignore[attr-defined]
    return label or "", ticks


def test_job_charts_label_their_y_axis_with_a_scaled_unit_and_distinct_ticks(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/jobs/{live.world.running.id}")
    page.wait_for_selector("#chart-memory .uplot")
    page.wait_for_selector("#chart-throughput .uplot")
    memory_label, memory_ticks = _axis(page, "#chart-memory")
    assert memory_label == "Peak memory (GiB)"  # 7 GiB: GiB, not bytes
    speed_label, speed_ticks = _axis(page, "#chart-throughput")
    assert speed_label == "Throughput (samples/s)"
    for ticks in (memory_ticks, speed_ticks):
        assert ticks and len(set(ticks)) == len(ticks), ticks
    flat = [float(t) for t in speed_ticks]  # the running job's throughput is 1.3 at every step
    assert min(flat) >= 1.2 and max(flat) <= 1.4
    assert probe.errors == []


def test_compare_charts_label_their_y_axis(live: Live, probe: PageProbe) -> None:
    page = probe.page
    ids = [live.world.running.id, *(j.id for j in live.world.finished)]
    page.goto(f"{live.url}/compare?" + "&".join(f"job={i}" for i in ids))
    page.wait_for_selector("#compare-4 .uplot")
    assert _axis(page, "#compare-3")[0] == "Peak memory (GiB)"
    label, ticks = _axis(page, "#compare-4")
    assert label == "Step time (s)" and len(set(ticks)) == len(ticks)
    assert probe.errors == []


def test_a_native_job_without_executor_metrics_shows_no_executor_panel(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/jobs/{live.world.queued[0].id}")
    page.wait_for_selector("#charts[data-polling]")
    assert page.locator("#chart-executor").is_hidden()
    assert probe.errors == []


def test_the_job_page_draws_the_eval_reward_of_each_eval_step(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/jobs/{live.world.running.id}")
    page.wait_for_selector("#chart-eval .uplot")
    assert page.get_attribute("#chart-eval", "data-last-step") == "25"  # the last step with eval samples
    assert page.get_attribute("#chart-eval", "data-y-label") == "Eval reward"
    assert probe.errors == []


def running_job_with_metric_reads(live: Live, page: Page, name: str, steps: int) -> tuple[int, list[str]]:
    """A running native job with `steps` steps of metrics, and the metric-read URLs the page will request."""
    with live.app.state.sessionmaker() as session:
        job = make_job(session, session.get(User, live.world.admin.id), None, name, "native", status="running",
                       attempt=1, step=steps)  # fmt: skip
        add_metrics(session, job, range(0, steps))
        session.commit()
        job_id = job.id
    reads: list[str] = []
    page.on("request", lambda r: reads.append(r.url) if f"/api/v1/jobs/{job_id}/metrics?" in r.url else None)
    return job_id, reads


def test_a_live_chart_appends_the_steps_after_its_own_last_one_without_a_gap(live: Live, probe: PageProbe) -> None:
    page = probe.page
    job_id, reads = running_job_with_metric_reads(live, page, "live-append", steps=10)
    page.goto(f"{live.url}/jobs/{job_id}")
    page.wait_for_selector("#chart-reward .uplot")
    for first, last in ((10, 20), (20, 35)):
        with live.app.state.sessionmaker() as session:
            add_metrics(session, session.get(Job, job_id), range(first, last))
            session.commit()
        page.wait_for_function(
            f"() => document.querySelector('#chart-reward').dataset.lastStep === '{last - 1}'", timeout=15000
        )
        # Every step from 0 drawn once: nothing missing at the seams, nothing drawn twice.
        assert page.get_attribute("#chart-reward", "data-points") == str(last)
    polls = [url for url in reads if "after_step=" in url]
    assert any("after_step=9&" in url or url.endswith("after_step=9") for url in polls)
    assert any(url.endswith("after_step=19") for url in polls)
    first_reads = [url for url in reads if "after_step=" not in url]
    assert len(first_reads) == len(set(first_reads))  # each chart read its whole series once, then only appends
    assert probe.errors == []


def test_a_retry_s_new_attempt_makes_the_charts_read_their_series_whole_again(live: Live, probe: PageProbe) -> None:
    """The new attempt replaces the points after the step it resumed from, so appending would keep stale ones."""
    page = probe.page
    job_id, reads = running_job_with_metric_reads(live, page, "retried", steps=20)
    page.goto(f"{live.url}/jobs/{job_id}")
    page.wait_for_selector("#chart-reward .uplot")
    whole_reads = len([url for url in reads if "after_step=" not in url])
    with live.app.state.sessionmaker() as session:
        job = session.get(Job, job_id)
        job.attempt = 2
        add_metrics(session, job, range(10, 25), attempt=2)  # resumed from the checkpoint at step 10
        session.commit()
    for _ in range(75):  # a few polls: the header shows attempt 2, then the charts read again
        if len([url for url in reads if "after_step=" not in url]) == 2 * whole_reads:
            break
        page.wait_for_timeout(200)
    assert len([url for url in reads if "after_step=" not in url]) == 2 * whole_reads
    page.wait_for_function("() => document.querySelector('#chart-reward').dataset.lastStep === '24'", timeout=15000)
    assert probe.errors == []


def test_a_step_axis_ticks_only_at_whole_steps(live: Live, probe: PageProbe) -> None:
    page = probe.page
    job_id, _ = running_job_with_metric_reads(live, page, "four-steps", steps=4)  # steps 0..3: a short axis
    page.goto(f"{live.url}/jobs/{job_id}")
    page.wait_for_selector("#chart-reward .uplot")
    ticks = json.loads(page.get_attribute("#chart-reward", "data-x-ticks") or "[]")
    assert ticks and all(tick.isdigit() for tick in ticks), ticks
    assert probe.errors == []
