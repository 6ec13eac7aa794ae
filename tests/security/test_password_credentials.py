"""Issue 33, item 1: a short-lived child token became a permanent password.

The bootstrap admin had only a token. A child token that expired in 5 minutes sent
`POST /api/v1/users/me/password {"new_password": ...}` and got 204, because the current password was asked for
only when one existed; after the token was revoked, password login opened /admin/users.

Now a password is set only by a caller who logged in with one (and gives it), or by a one-time setup link the
server prints at start: every token-derived caller (a token, a child token, a page session opened with one) gets
403 on the password routes, and every credential change is in the audit log.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from security_support import add_password_user, csrf_of, login_with_password, login_with_token, token_for
from server_harness import Harness, Headers
from sqlalchemy import select, update

from server.models import AuditEvent, User

PASSWORD = "correct horse battery"
CHOSEN = "the attacker's chosen password"


def _child_token(harness: Harness, parent: Headers, minutes: int = 5) -> tuple[int, Headers]:
    expires = (datetime.now(UTC) + timedelta(minutes=minutes)).isoformat()
    made = harness.client.post("/api/v1/tokens", json={"name": "short", "expires_at": expires}, headers=parent)
    assert made.status_code == 201, made.text
    return made.json()["id"], {"Authorization": f"Bearer {made.json()['token']}"}


def _password_hash(harness: Harness, username: str) -> str | None:
    with harness.session() as session:
        return session.scalar(select(User.password_hash).where(User.username == username))


def _actions(harness: Harness, username: str) -> list[tuple[str, str | None]]:
    with harness.session() as session:
        user_id = session.scalar(select(User.id).where(User.username == username))
        rows = session.execute(
            select(AuditEvent.action, AuditEvent.detail).where(AuditEvent.subject_user_id == user_id)
        ).all()
    return [(action, detail) for action, detail in rows]


def test_a_five_minute_child_token_cannot_turn_into_a_password_that_outlives_it(harness: Harness) -> None:
    """The attack as it was run: the admin has only its bootstrap token."""
    child_id, child = _child_token(harness, harness.admin)
    answer = harness.client.post("/api/v1/users/me/password", json={"new_password": CHOSEN}, headers=child)
    assert answer.status_code == 403 and "never with a token" in answer.json()["detail"]
    assert harness.client.delete(f"/api/v1/tokens/{child_id}", headers=harness.admin).status_code == 204
    assert login_with_password(harness, "admin", CHOSEN) == 401
    assert harness.client.get("/admin/users", follow_redirects=False).status_code == 303  # to the login page
    assert _password_hash(harness, "admin") is None


def test_a_token_cannot_change_a_password_even_with_the_current_one(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    change = {"current_password": PASSWORD, "new_password": CHOSEN}
    answer = harness.client.post("/api/v1/users/me/password", json=change, headers=token_for(harness, "pat"))
    assert answer.status_code == 403
    assert login_with_password(harness, "pat", PASSWORD) == 303


def test_a_page_session_opened_with_a_token_cannot_set_a_password(harness: Harness) -> None:
    assert login_with_token(harness, harness.admin) == 303
    form = {"new_password": CHOSEN, "csrf_token": csrf_of(harness.client.get("/settings").text)}
    assert harness.client.post("/settings/password", data=form).status_code == 403
    assert _password_hash(harness, "admin") is None


def test_a_server_admin_token_cannot_create_a_user_with_a_password(harness: Harness) -> None:
    _, child = _child_token(harness, harness.admin)
    body = {"username": "backdoor", "password": CHOSEN, "is_admin": True}
    assert harness.client.post("/api/v1/users", json=body, headers=child).status_code == 403
    assert login_with_password(harness, "backdoor", CHOSEN) == 401
    without_password = {"username": "plain", "team_id": 1}
    assert harness.client.post("/api/v1/users", json=without_password, headers=child).status_code == 201


def test_a_page_session_opened_with_a_token_cannot_create_a_user_with_a_password(harness: Harness) -> None:
    assert login_with_token(harness, harness.admin) == 303
    form = {"username": "backdoor", "password": CHOSEN, "csrf_token": csrf_of(harness.client.get("/admin/users").text)}
    assert harness.client.post("/admin/users", data=form, follow_redirects=False).status_code == 403
    assert _password_hash(harness, "backdoor") is None


def _change_on_settings_page(harness: Harness, current: str, new: str) -> int:
    form = {"current_password": current, "new_password": new}
    form["csrf_token"] = csrf_of(harness.client.get("/settings").text)
    return harness.client.post("/settings/password", data=form).status_code


def test_changing_a_password_needs_the_current_one(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    assert login_with_password(harness, "pat", PASSWORD) == 303
    assert _change_on_settings_page(harness, "", CHOSEN) == 422
    assert _change_on_settings_page(harness, "not the password", CHOSEN) == 422
    assert login_with_password(harness, "pat", CHOSEN) == 401
    assert login_with_password(harness, "pat", PASSWORD) == 303
    assert _change_on_settings_page(harness, PASSWORD, CHOSEN) == 200
    assert login_with_password(harness, "pat", CHOSEN) == 303


def test_every_password_change_is_in_the_audit_log(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    assert login_with_password(harness, "pat", PASSWORD) == 303
    assert _change_on_settings_page(harness, PASSWORD, CHOSEN) == 200
    assert _actions(harness, "pat") == [
        ("user.create", "with a password"),
        ("member.add", "member"),
        ("user.password", None),
    ]


def test_pages_opened_with_a_token_offer_no_password_fields(harness: Harness) -> None:
    assert login_with_token(harness, harness.admin) == 303
    assert 'action="/settings/password"' not in harness.client.get("/settings").text
    assert 'name="password"' not in harness.client.get("/admin/users").text


def test_pages_opened_with_a_password_offer_the_password_fields(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    with harness.session() as session:
        session.execute(update(User).where(User.username == "pat").values(is_admin=True))
        session.commit()
    assert login_with_password(harness, "pat", PASSWORD) == 303
    assert 'action="/settings/password"' in harness.client.get("/settings").text
    assert 'name="password"' in harness.client.get("/admin/users").text
