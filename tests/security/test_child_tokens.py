"""Attack 3, token laundering: a 1-day token made a token without expiry that outlived its revoked parent.
A token made by a token now expires no later than it, is revoked with it, and is never wider."""

from __future__ import annotations

from datetime import datetime, timedelta

from security_support import csrf_of, login_with_token
from server_harness import Harness, bearer

from server.models import utcnow


def _make(harness: Harness, headers: dict[str, str], **body: object) -> dict[str, object]:
    response = harness.client.post("/api/v1/tokens", json={"name": "child", **body}, headers=headers)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_a_child_token_without_expiry_gets_its_parents_expiry(harness: Harness) -> None:
    parent = harness.add_user("lena", "default", expires_at=utcnow() + timedelta(days=1))
    child = _make(harness, parent)
    expires = datetime.fromisoformat(str(child["expires_at"])).replace(tzinfo=None)
    assert timedelta(hours=23) < expires - utcnow() <= timedelta(days=1)


def test_a_child_token_cannot_outlive_its_parent(harness: Harness) -> None:
    parent = harness.add_user("lena", "default", expires_at=utcnow() + timedelta(days=1))
    response = harness.client.post("/api/v1/tokens", json={"name": "c", "expires_in_days": 30}, headers=parent)
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "expires_at"


def test_revoking_a_token_revokes_its_children_and_grandchildren(harness: Harness) -> None:
    parent = harness.add_user("lena", "default")
    child = _make(harness, parent)
    grandchild = _make(harness, bearer(str(child["token"])))
    parent_id = harness.client.get("/api/v1/tokens", headers=parent).json()["items"][-1]["id"]
    assert harness.client.delete(f"/api/v1/tokens/{parent_id}", headers=bearer(str(child["token"]))).status_code == 204
    for made in (child, grandchild):
        assert harness.client.get("/api/v1/jobs", headers=bearer(str(made["token"]))).status_code == 401


def test_a_token_made_on_a_token_opened_page_session_is_the_sessions_tokens_child(harness: Harness) -> None:
    parent = harness.add_user("lena", "default", expires_at=utcnow() + timedelta(days=1))
    assert login_with_token(harness, parent) == 303
    csrf = csrf_of(harness.client.get("/settings").text)
    harness.client.post("/settings/tokens", data={"name": "laptop", "scope": "write", "csrf_token": csrf})
    items = harness.client.get("/api/v1/tokens", headers=parent).json()["items"]
    laptop = next(t for t in items if t["name"] == "laptop")
    assert laptop["parent_id"] is not None and laptop["expires_at"] is not None


def test_a_read_token_cannot_make_a_wider_token(harness: Harness) -> None:
    reader = harness.add_user("rita", "default", scope="read")
    response = harness.client.post("/api/v1/tokens", json={"name": "w", "scope": "write"}, headers=reader)
    assert response.status_code == 403 and "read-only" in response.text
