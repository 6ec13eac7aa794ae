"""The submit form shows only the options of the chosen model family, algorithm and executor, and follows a
change of choice at once."""

from __future__ import annotations

import pytest
from browser_support import Live, PageProbe

pytestmark = pytest.mark.browser


def _visible(page: object, field: str) -> bool:
    return page.locator(f'[id="f-{field}"]').is_visible()  # type: ignore[attr-defined, no-any-return]


def test_choosing_an_executor_and_a_family_shows_their_options_only(live: Live, probe: PageProbe) -> None:
    page = probe.page
    page.goto(f"{live.url}/submit")
    assert not _visible(page, "executor.group_width") and not _visible(page, "model.num_frames")
    page.select_option('select[name="executor.name"]', "jagg")
    page.select_option('select[name="model.family"]', "wan")
    assert _visible(page, "executor.group_width") and _visible(page, "model.num_frames")
    assert not _visible(page, "executor.max_retained_graphs")
    page.select_option('select[name="executor.name"]', "lean_retain")
    assert _visible(page, "executor.max_retained_graphs") and not _visible(page, "executor.group_width")
    assert probe.errors == []
