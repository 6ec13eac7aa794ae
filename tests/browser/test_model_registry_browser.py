"""The model registry in a browser: the job page's "Register as model" control makes version 1 and 2 of a model
from two checkpoints, and the model page's alias form sets then moves `production`; the pages lay out at 1280 and
1920 px wide (saved under test-artifacts/screenshots)."""

from __future__ import annotations

import pytest
from browser_support import SCREENSHOTS, Live, PageProbe
from test_layout_browser import CHECK_LAYOUT, VIEWPORTS

from server.models import Artifact

pytestmark = pytest.mark.browser


def add_checkpoints(live: Live, steps: list[int]) -> None:
    job_id = live.world.running.id
    with live.app.state.sessionmaker() as session:
        session.add_all(
            Artifact(
                job_id=job_id, attempt=1, kind="checkpoint", name=f"step-{s}", step=s, path=f"checkpoints/step-{s}"
            )
            for s in steps
        )
        session.commit()


def register_from_job_page(live: Live, probe: PageProbe, step: int) -> None:
    page = probe.page
    page.goto(f"{live.url}/jobs/{live.world.running.id}")  # type: ignore[attr-defined]
    page.fill("form.register-model input[name=name]", "sunset-browser")  # type: ignore[attr-defined]
    page.select_option("form.register-model select[name=step]", str(step))  # type: ignore[attr-defined]
    page.click("form.register-model button:has-text('Register as model')")  # type: ignore[attr-defined]
    page.wait_for_url(f"{live.url}/models/sunset-browser?team=vision")  # type: ignore[attr-defined]


def set_alias(page: object, alias: str, version: int) -> None:
    page.fill("form.alias-form input[name=alias]", alias)  # type: ignore[attr-defined]
    page.select_option("form.alias-form select[name=version]", str(version))  # type: ignore[attr-defined]
    page.click("form.alias-form button:has-text('Set alias')")  # type: ignore[attr-defined]
    page.wait_for_load_state("networkidle")  # type: ignore[attr-defined]


def test_register_two_checkpoints_then_set_and_move_an_alias_by_clicking(
    live: Live, probe: PageProbe, browser: object, login_state: str
) -> None:
    add_checkpoints(live, [12, 24])
    register_from_job_page(live, probe, 12)
    register_from_job_page(live, probe, 24)
    page = probe.page
    assert page.locator("article#version-2 dd:has-text('step 24')").count() == 1  # type: ignore[attr-defined]
    assert page.locator("article#version-1 dd:has-text('step 12')").count() == 1  # type: ignore[attr-defined]
    set_alias(page, "production", 1)
    set_alias(page, "production", 2)
    row = page.locator("#aliases tbody tr")  # type: ignore[attr-defined]
    assert row.count() == 1 and row.inner_text().split("\t")[:2] == ["production", "2"]
    assert page.locator("article#version-2 .pill:has-text('production')").count() == 1  # type: ignore[attr-defined]
    assert probe.errors == []

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    for width, height in VIEWPORTS:
        context = browser.new_context(storage_state=login_state, viewport={"width": width, "height": height})  # type: ignore[attr-defined]
        sized = context.new_page()
        for name, path in (
            ("models", "/models"),
            ("model", "/models/sunset-browser?team=vision"),
            ("job-register", f"/jobs/{live.world.running.id}"),
        ):
            sized.goto(live.url + path)
            sized.wait_for_load_state("networkidle")
            problems += [f"{name} at {width}: {p}" for p in sized.evaluate(CHECK_LAYOUT)]
            shot = str(SCREENSHOTS / f"{name}-{width}.png")
            if name == "job-register":
                sized.locator("#artifacts").screenshot(path=shot)
            else:
                sized.screenshot(path=shot, full_page=True)
        context.close()
    assert problems == []
