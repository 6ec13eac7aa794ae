"""Browser tests: a live uvicorn on a free port (temp SQLite platform) driven by Debian's Chromium via Playwright.

Without /usr/bin/chromium they skip with one line, unless SFUMATO_TEST_REQUIRE_BROWSER is set (CI), where they fail.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))
from browser_support import Live, PageProbe
from page_fixtures import PASSWORD, build_home, make_app, served

CHROMIUM = Path("/usr/bin/chromium")


@pytest.fixture(scope="session")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    if not CHROMIUM.exists():
        if os.environ.get("SFUMATO_TEST_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing and SFUMATO_TEST_REQUIRE_BROWSER is set")
        pytest.skip(f"{CHROMIUM} is missing")
    home = tmp_path_factory.mktemp("platform")
    world = build_home(home)
    app = make_app(home)
    with served(app) as url:
        yield Live(url, world, app)


@pytest.fixture(scope="module")
def browser(live: Live) -> Iterator[object]:
    """Per module: Playwright's sync API holds an event loop on the main thread while it is open, which would
    break every later test that runs asyncio (the reward server's batcher) or a Playwright of its own."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        chromium = pw.chromium.launch(
            executable_path=str(CHROMIUM),
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def login_state(browser: object, live: Live, tmp_path_factory: pytest.TempPathFactory) -> str:
    """Log in once through the form; each test's context starts from the saved cookies."""
    context = browser.new_context()  # type: ignore[attr-defined]
    page = context.new_page()
    page.goto(f"{live.url}/login")
    page.fill("input[name=username]", "ada")
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live.url}/jobs")
    path = str(tmp_path_factory.mktemp("state") / "state.json")
    context.storage_state(path=path)
    context.close()
    return path


@pytest.fixture
def probe(browser: object, login_state: str) -> Iterator[PageProbe]:
    context = browser.new_context(storage_state=login_state, viewport={"width": 1440, "height": 900})  # type: ignore[attr-defined]
    page = context.new_page()
    errors: list[str] = []
    page.on("console", lambda msg: errors.append(f"console {msg.type}: {msg.text}") if msg.type == "error" else None)
    page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
    page.on("response", lambda r: errors.append(f"HTTP {r.status} {r.url}") if r.status >= 400 else None)
    yield PageProbe(page, errors)
    context.close()
