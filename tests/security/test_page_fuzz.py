"""Attack 9's other half: the fuzz now covers the page routes too (form posts with a valid CSRF token), against a
live server on PostgreSQL. A short run here; `python tests/security/page_fuzz.py` runs a long one."""

from __future__ import annotations

from pathlib import Path

import pytest
from openapi_fuzz import live_server
from page_fuzz import BEHIND_PROXY, fuzz_pages, page_routes

pytestmark = pytest.mark.postgres


def test_fuzzed_page_requests_get_no_server_error(postgres_url: str, tmp_path: Path) -> None:
    with live_server(postgres_url, tmp_path / "home", BEHIND_PROXY) as server:
        report = fuzz_pages(server, examples=6)
    posts = [path for method, path, _ in page_routes() if method == "POST"]
    assert "/submit" in posts and "/settings/tokens" in posts
    assert report.requests >= 6 * len(page_routes())
    assert report.failures == [], report.summary() + "\n" + "\n".join(report.failures[:20])
