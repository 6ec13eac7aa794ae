"""/docs (Swagger UI) and /redoc (ReDoc) render the API's operations with every other origin blocked:
their scripts and styles come from the server (the npm lockfile), and the CSP lets them run."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

import pytest
from browser_support import Live

pytestmark = pytest.mark.browser

LOCAL_HOSTS = {"127.0.0.1", "localhost"}
# ReDoc's sidebar always tries Redocly's logo from their CDN (and hides it when it fails to load); the CSP
# refuses it, so no request leaves, and the console says so.
REDOCLY_LOGO = "https://cdn.redoc.ly/redoc/logo-mini.svg"


class OfflinePage:
    """A page whose requests to any other host are aborted (and remembered), with its console errors."""

    def __init__(self, page: object) -> None:
        self.page = page
        self.blocked: list[str] = []
        self.errors: list[str] = []
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)  # type: ignore[attr-defined]
        page.on("pageerror", lambda exc: self.errors.append(str(exc)))  # type: ignore[attr-defined]
        page.route("**/*", self._only_local)  # type: ignore[attr-defined]

    def _only_local(self, route: object) -> None:
        url = route.request.url  # type: ignore[attr-defined]
        if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).hostname in LOCAL_HOSTS:
            route.continue_()  # type: ignore[attr-defined]
        else:
            self.blocked.append(url)
            route.abort("internetdisconnected")  # type: ignore[attr-defined]


@pytest.fixture
def offline(browser: object) -> Iterator[OfflinePage]:
    context = browser.new_context(viewport={"width": 1280, "height": 800})  # type: ignore[attr-defined]
    yield OfflinePage(context.new_page())
    context.close()


def test_swagger_ui_renders_the_operations_offline(live: Live, offline: OfflinePage) -> None:
    offline.page.goto(f"{live.url}/docs")  # type: ignore[attr-defined]
    offline.page.wait_for_selector(".opblock-summary-path", timeout=20_000)  # type: ignore[attr-defined]
    paths = offline.page.locator(".opblock-summary-path").all_inner_texts()  # type: ignore[attr-defined]
    assert "/api/v1/jobs" in [p.replace("\u200b", "") for p in paths]
    assert offline.blocked == [] and offline.errors == []


def test_redoc_renders_the_operations_offline(live: Live, offline: OfflinePage) -> None:
    offline.page.goto(f"{live.url}/redoc")  # type: ignore[attr-defined]
    operations = offline.page.locator("[data-section-id*='operation/']")  # type: ignore[attr-defined]
    operations.first.wait_for(timeout=30_000)
    assert operations.count() > 10
    assert "/api/v1/jobs" in offline.page.content()  # type: ignore[attr-defined]
    assert offline.blocked == []
    assert [e for e in offline.errors if not (REDOCLY_LOGO in e and "Content Security Policy" in e)] == []
