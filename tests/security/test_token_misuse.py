"""Revoked, expired and misplaced tokens: 401 for a dead token, 403 for a job token on another job."""

from __future__ import annotations

from datetime import timedelta

from security_support import TwoTeams
from server_harness import Harness, bearer

from server.models import utcnow


def test_revoked_token_is_401_everywhere(harness: Harness) -> None:
    created = harness.client.post("/api/v1/tokens", json={"name": "gone"}, headers=harness.admin).json()
    harness.client.delete(f"/api/v1/tokens/{created['id']}", headers=harness.admin)
    dead = bearer(created["token"])
    for method, path in (("GET", "/api/v1/jobs"), ("POST", "/api/v1/jobs"), ("GET", "/api/v1/tokens")):
        response = harness.client.request(method, path, headers=dead, json={})
        assert response.status_code == 401 and response.json() == {"detail": "token revoked"}


def test_expired_token_is_401(harness: Harness) -> None:
    headers = harness.add_user("old", "default", expires_at=utcnow() - timedelta(seconds=1))
    response = harness.client.get("/api/v1/jobs", headers=headers)
    assert response.status_code == 401 and response.json() == {"detail": "token expired"}


def test_job_token_on_another_job_is_403_and_stores_nothing(harness: Harness, two_teams: TwoTeams) -> None:
    other = harness.submit_ok({"name": "other"}, headers=two_teams.lab)
    harness.start_job(other)
    batch = {"attempt": 1, "steps": [{"step": 1, "wall_time": 1.0, "values": {"loss": 1.0}}]}
    response = harness.client.post(f"/api/v1/ingest/{other}/metrics", json=batch, headers=two_teams.job_token)
    assert response.status_code == 403
    keys = harness.client.get(f"/api/v1/jobs/{other}/metrics/keys", headers=two_teams.lab).json()["keys"]
    assert keys == []


def test_job_token_reads_nothing_and_dies_with_its_job(harness: Harness, two_teams: TwoTeams) -> None:
    assert harness.client.get(f"/api/v1/jobs/{two_teams.job_id}", headers=two_teams.job_token).status_code == 401
    harness.finish_job(two_teams.job_id, "succeeded")
    progress = {"attempt": 1, "step": 2, "total_steps": 10}
    url = f"/api/v1/ingest/{two_teams.job_id}/progress"
    assert harness.client.post(url, json=progress, headers=two_teams.job_token).status_code == 401


def test_garbage_and_missing_bearer_are_401(harness: Harness) -> None:
    assert harness.client.get("/api/v1/jobs", headers=bearer("sfu_" + "A" * 43)).status_code == 401
    assert harness.client.get("/api/v1/jobs", headers={"Authorization": "Basic YTpi"}).status_code == 401
    assert harness.client.get("/api/v1/jobs").status_code == 401
