"""A small schemathesis fuzz of every API operation against a live server on PostgreSQL (make fuzz runs a long one)."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from openapi_fuzz import ADMIN_TOKEN, LiveServer, fuzz, live_server

pytestmark = pytest.mark.postgres


def test_fuzzed_requests_get_no_server_error_and_json_errors(postgres_url: str, tmp_path: Path) -> None:
    with live_server(postgres_url, tmp_path / "home") as server:
        report = fuzz(server, examples=3)
        nul_answers = _nul_characters(server)
    assert report.requests > 150
    assert report.failures == [], report.summary() + "\n" + "\n".join(report.failures[:20])
    assert nul_answers == [422] * len(nul_answers)


def _nul_characters(server: LiveServer) -> list[int]:
    """PostgreSQL text cannot hold NUL: such requests (found by the fuzz) are 422, not 500."""
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
    with httpx.Client(base_url=server.url, headers=headers) as client:
        return [
            client.post("/api/v1/tokens", json={"name": "a\x00b"}).status_code,
            client.post("/api/v1/jobs", json={"name": "a\x00b"}).status_code,
            client.get("/api/v1/jobs", params={"executor": "a\x00"}).status_code,
            client.get("/api/v1/jobs/1/metrics", params={"keys": "loss\x00"}).status_code,
            client.post(
                "/api/v1/ingest/1/metrics",
                json={"attempt": 1, "steps": [{"step": 1, "wall_time": 1.0, "values": {"a\x00": 1.0}}]},
                headers={"Authorization": f"Bearer {server.job_token}"},
            ).status_code,
        ]
