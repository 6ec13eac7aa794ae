"""Whatever a client sends, it gets a clear JSON 4xx, never a 500."""

from __future__ import annotations

import subprocess
import sys

import pytest
from server_harness import Harness, bearer


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: HTTP-level behaviour: the database engine plays no part."""
    return migrated_sqlite_url


def test_health_needs_no_token(harness: Harness) -> None:
    response = harness.client.get("/api/v1/health")
    assert response.status_code == 200 and response.json()["status"] == "ok"


def test_openapi_docs_are_served(harness: Harness) -> None:
    assert harness.client.get("/docs").status_code == 200
    assert "/api/v1/jobs" in harness.client.get("/openapi.json").json()["paths"]


def test_missing_token_is_401_with_json_body(harness: Harness) -> None:
    response = harness.client.get("/api/v1/jobs")
    assert response.status_code == 401
    assert "bearer" in response.json()["detail"].lower()


def test_wrong_token_is_401(harness: Harness) -> None:
    response = harness.client.get("/api/v1/jobs", headers=bearer("sfu_not-a-real-token"))
    assert response.status_code == 401 and response.json() == {"detail": "invalid token"}


def test_unknown_job_id_is_404(harness: Harness) -> None:
    response = harness.client.get("/api/v1/jobs/999999", headers=harness.admin)
    assert response.status_code == 404 and response.json() == {"detail": "job 999999 not found"}


def test_non_numeric_job_id_is_422_naming_the_parameter(harness: Harness) -> None:
    response = harness.client.get("/api/v1/jobs/abc", headers=harness.admin)
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "job_id"


def test_unknown_route_is_404_json(harness: Harness) -> None:
    response = harness.client.get("/api/v1/nothing-here", headers=harness.admin)
    assert response.status_code == 404 and "detail" in response.json()


def test_malformed_json_spec_is_400(harness: Harness) -> None:
    response = harness.client.post(
        "/api/v1/jobs", content=b'{"name": "x",', headers={**harness.admin, "Content-Type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["detail"].startswith("malformed JSON body")


def test_malformed_json_ingest_batch_is_400(harness: Harness) -> None:
    job_headers = harness.start_job(harness.submit_ok())
    response = harness.client.post(
        "/api/v1/ingest/1/metrics", content=b"[1, 2", headers={**job_headers, "Content-Type": "application/json"}
    )
    assert response.status_code == 400 and response.json()["detail"].startswith("malformed JSON body")


def test_body_over_the_declared_limit_is_413(harness: Harness) -> None:
    body = b"x" * (harness.settings.max_body_bytes + 1)
    response = harness.client.post("/api/v1/jobs", content=body, headers=harness.admin)
    assert response.status_code == 413 and "larger than" in response.json()["detail"]


def test_chunked_body_over_the_limit_is_413(harness: Harness) -> None:
    chunk = b" " * 100_000

    def chunks():  # no Content-Length: the limit is enforced while reading
        for _ in range(harness.settings.max_body_bytes // len(chunk) + 2):
            yield chunk

    response = harness.client.post("/api/v1/jobs", content=chunks(), headers=harness.admin)
    assert response.status_code == 413


def test_importing_the_app_does_not_import_torch() -> None:
    code = "import sys, server.main, sfumato.app; sys.exit('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
