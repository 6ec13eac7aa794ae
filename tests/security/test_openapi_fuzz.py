"""A small schemathesis fuzz of every API operation against a live server on PostgreSQL (make fuzz runs a long one)."""

from __future__ import annotations

from pathlib import Path

import pytest
from openapi_fuzz import fuzz, live_server

pytestmark = pytest.mark.postgres


def test_fuzzed_requests_get_no_server_error_and_json_errors(postgres_url: str, tmp_path: Path) -> None:
    with live_server(postgres_url, tmp_path / "home") as server:
        report = fuzz(server, examples=3)
    assert report.requests > 150
    assert report.failures == [], report.summary() + "\n" + "\n".join(report.failures[:20])
