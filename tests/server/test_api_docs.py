"""/docs and /redoc reference only this server: every URL in their HTML is a local path that it serves."""

from __future__ import annotations

import re

import pytest
from server_harness import Harness

REFERENCE = re.compile(r"""(?:src|href|url)\s*[=:(]\s*['"]?([^'")\s>]+)""")


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: the docs pages do not read the database."""
    return migrated_sqlite_url


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
def test_api_docs_page_references_no_other_origin(harness: Harness, page: str) -> None:
    html = harness.client.get(page).text
    assert re.findall(r"(?:https?:)?//[\w.-]+", html) == []
    references = REFERENCE.findall(html)
    assert "/openapi.json" in references and any(r.startswith("/static/vendor/") for r in references)
    for reference in references:
        assert reference.startswith("/"), reference
        assert harness.client.get(reference).status_code == 200, reference
