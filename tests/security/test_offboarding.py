"""Attack 4, no offboarding: a user removed from their team kept their token, their session and their old jobs;
no endpoint disabled a user or revoked someone else's tokens."""

from __future__ import annotations

from security_support import add_password_user, csrf_of, login_with_password, login_with_token, token_for
from server_harness import Harness

PASSWORD = "correct horse battery"


def _user_id(harness: Harness, username: str) -> int:
    users = harness.client.get("/api/v1/users", headers=harness.admin).json()["items"]
    return int(next(u["id"] for u in users if u["username"] == username))


def _disable(harness: Harness, user_id: int, disabled: bool = True) -> int:
    body = {"disabled": disabled}
    return harness.client.patch(f"/api/v1/users/{user_id}", json=body, headers=harness.admin).status_code


def test_disabling_a_user_ends_their_tokens_and_sessions_at_once(harness: Harness) -> None:
    lena = harness.add_user("lena", "default")
    assert login_with_token(harness, lena) == 303
    assert harness.client.get("/settings", follow_redirects=False).status_code == 200
    assert _disable(harness, _user_id(harness, "lena")) == 200
    assert harness.client.get("/api/v1/jobs", headers=lena).status_code == 401
    assert harness.client.get("/settings", follow_redirects=False).status_code == 303
    assert _disable(harness, _user_id(harness, "lena"), disabled=False) == 200
    assert harness.client.get("/api/v1/jobs", headers=lena).status_code == 401  # revoked for good


def test_a_disabled_user_cannot_log_in_with_the_right_password(harness: Harness) -> None:
    pat_id = add_password_user(harness, "pat", PASSWORD)
    assert _disable(harness, pat_id) == 200
    assert login_with_password(harness, "pat", PASSWORD) == 401
    user = harness.client.get("/api/v1/users", headers=harness.admin).json()["items"]
    assert next(u for u in user if u["id"] == pat_id)["disabled"] is True


def test_only_a_server_admin_disables_users_and_never_themselves(harness: Harness) -> None:
    lena = harness.add_user("lena", "default", "admin")
    assert harness.client.patch("/api/v1/users/1", json={"disabled": True}, headers=lena).status_code == 403
    response = harness.client.patch("/api/v1/users/1", json={"disabled": True}, headers=harness.admin)
    assert response.status_code == 409 and "yourself" in response.text
    assert harness.client.patch("/api/v1/users/999", json={"disabled": True}, headers=harness.admin).status_code == 404


def test_a_server_admin_lists_and_revokes_another_users_tokens(harness: Harness) -> None:
    lena = harness.add_user("lena", "default")
    lena_id = _user_id(harness, "lena")
    listed = harness.client.get(f"/api/v1/users/{lena_id}/tokens", headers=harness.admin)
    assert listed.status_code == 200 and "token" not in listed.json()["items"][0]
    token_id = listed.json()["items"][0]["id"]
    assert harness.client.get(f"/api/v1/users/{lena_id}/tokens", headers=lena).status_code == 403
    revoked = harness.client.delete(f"/api/v1/users/{lena_id}/tokens/{token_id}", headers=harness.admin)
    assert revoked.status_code == 204
    assert harness.client.get("/api/v1/jobs", headers=lena).status_code == 401


def test_removal_from_a_team_ends_access_to_its_jobs_their_own_included(harness: Harness) -> None:
    lena = harness.add_user("lena", "lab", "member")
    harness.join("admin", "lab", "admin")
    job_id = harness.submit_ok({"name": "mine"}, headers=lena)
    assert harness.client.get(f"/api/v1/jobs/{job_id}", headers=lena).status_code == 200
    lab = next(
        t for t in harness.client.get("/api/v1/teams", headers=harness.admin).json()["items"] if t["name"] == "lab"
    )
    lena_id = _user_id(harness, "lena")
    removed = harness.client.delete(f"/api/v1/teams/{lab['id']}/members/{lena_id}", headers=harness.admin)
    assert removed.status_code == 204
    assert harness.client.get(f"/api/v1/jobs/{job_id}", headers=lena).status_code == 404
    assert harness.client.get(f"/api/v1/jobs/{job_id}/metrics", headers=lena).status_code == 404
    assert job_id not in [j["id"] for j in harness.client.get("/api/v1/jobs", headers=lena).json()["items"]]
    assert token_for(harness, "lena")  # the user still exists; only the team's jobs are gone


def test_the_users_page_disables_and_enables_a_user_with_its_button(harness: Harness) -> None:
    lena = harness.add_user("lena", "default")
    lena_id = _user_id(harness, "lena")
    assert login_with_token(harness, harness.admin) == 303
    page = harness.client.get("/admin/users").text
    assert f'action="/admin/users/{lena_id}/access"' in page and 'action="/admin/users/1/access"' not in page
    form = {"disabled": "true", "csrf_token": csrf_of(page)}
    answer = harness.client.post(f"/admin/users/{lena_id}/access", data=form, follow_redirects=False)
    assert answer.status_code == 303
    assert harness.client.get("/api/v1/jobs", headers=lena).status_code == 401
    assert ">Enable</button>" in harness.client.get("/admin/users").text
