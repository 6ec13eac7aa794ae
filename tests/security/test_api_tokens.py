"""API tokens through the API: created once-shown and hashed, listed without secrets, revoked for good."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from server_harness import Harness, bearer
from sqlalchemy import select

from server.models import ApiToken
from server.services.tokens import hash_token


def _create(harness: Harness, **body: object) -> dict[str, object]:
    response = harness.client.post("/api/v1/tokens", json={"name": "ci", **body}, headers=harness.admin)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_created_token_is_shown_once_stored_hashed_and_works(harness: Harness) -> None:
    created = _create(harness, scope="read", expires_in_days=7)
    raw = str(created["token"])
    assert raw.startswith("sfu_") and created["scope"] == "read"
    with harness.session() as session:
        stored = session.scalars(select(ApiToken).where(ApiToken.id == created["id"])).one()
        assert stored.token_hash == hash_token(raw)
    assert harness.client.get("/api/v1/jobs", headers=bearer(raw)).status_code == 200
    listed = harness.client.get("/api/v1/tokens", headers=harness.admin).json()["items"]
    mine = next(t for t in listed if t["id"] == created["id"])
    assert "token" not in mine and "token_hash" not in mine and raw not in str(listed)
    assert mine["last_used_at"] is not None and mine["expires_at"] is not None


def test_expires_days_alias_of_the_client_is_accepted(harness: Harness) -> None:
    created = _create(harness, expires_days=2)
    expires = datetime.fromisoformat(str(created["expires_at"]))
    assert timedelta(days=1) < expires - datetime.now(UTC) <= timedelta(days=2)


@pytest.mark.parametrize(
    "body",
    [
        {"name": ""},
        {"name": "x", "scope": "root"},
        {"name": "x", "expires_at": "2001-01-01T00:00:00Z"},
        {"name": "x", "expires_at": "9999-12-31T23:59:59-05:00"},
        {"name": "x", "expires_in_days": 0},
        {"name": "x", "expires_in_days": 3, "expires_at": "2999-01-01T00:00:00Z"},
        {"name": "x", "unknown": 1},
    ],
)
def test_bad_token_requests_are_422(harness: Harness, body: dict[str, object]) -> None:
    response = harness.client.post("/api/v1/tokens", json=body, headers=harness.admin)
    assert response.status_code == 422, response.text


def test_revoked_token_is_refused_from_then_on(harness: Harness) -> None:
    created = _create(harness)
    response = harness.client.delete(f"/api/v1/tokens/{created['id']}", headers=harness.admin)
    assert response.status_code == 204 and response.content == b""
    assert harness.client.get("/api/v1/jobs", headers=bearer(str(created["token"]))).status_code == 401
    listed = harness.client.get("/api/v1/tokens", headers=harness.admin).json()["items"]
    assert next(t for t in listed if t["id"] == created["id"])["revoked_at"] is not None


def test_another_users_token_cannot_be_seen_or_revoked(harness: Harness) -> None:
    created = _create(harness)
    bea = harness.add_user("bea", "default")
    assert all(t["id"] != created["id"] for t in harness.client.get("/api/v1/tokens", headers=bea).json()["items"])
    assert harness.client.delete(f"/api/v1/tokens/{created['id']}", headers=bea).status_code == 404
    assert harness.client.get("/api/v1/jobs", headers=bearer(str(created["token"]))).status_code == 200


def test_read_only_token_cannot_create_or_revoke_tokens(harness: Harness) -> None:
    reader = harness.add_user("bea", "default", scope="read")
    assert harness.client.post("/api/v1/tokens", json={"name": "x"}, headers=reader).status_code == 403
    assert harness.client.delete("/api/v1/tokens/1", headers=reader).status_code == 403
