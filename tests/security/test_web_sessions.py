"""Web login hardening: rate limit, logout that ends the cookie, CSRF on every POST, the token settings page."""

from __future__ import annotations

import re

import pytest
from route_table import routes_of
from security_support import add_password_user, csrf_of
from server_harness import Harness, bearer

from server.api.page_session import COOKIE

PASSWORD = "correct horse battery"


def _login(harness: Harness, username: str, password: str) -> int:
    token = csrf_of(harness.client.get("/login").text)
    form = {"username": username, "password": password, "csrf_token": token}
    return harness.client.post("/login", data=form, follow_redirects=False).status_code


def _replace_cookie(harness: Harness, value: str) -> None:
    harness.client.cookies.clear()
    harness.client.cookies.set(COOKIE, value)


@pytest.fixture
def pat(harness: Harness) -> str:
    """A user with a password, created by the server admin."""
    add_password_user(harness, "pat", PASSWORD)
    return "pat"


def test_five_failed_logins_a_minute_lock_that_name_even_with_the_right_password(harness: Harness, pat: str) -> None:
    assert [_login(harness, pat, "wrong password") for _ in range(5)] == [401] * 5
    assert _login(harness, pat, PASSWORD) == 429
    assert _login(harness, "somebody-else", "wrong password") == 401  # another name is not locked
    audit = harness.client.get("/api/v1/teams/1/audit?action=login.failed", headers=harness.admin).json()
    assert audit["total"] == 5 and audit["items"][0]["subject"] == "pat"


def test_password_login_sets_a_signed_httponly_lax_cookie(harness: Harness, pat: str) -> None:
    token = csrf_of(harness.client.get("/login").text)
    form = {"username": pat, "password": PASSWORD, "csrf_token": token}
    response = harness.client.post("/login", data=form, follow_redirects=False)
    cookie = response.headers["set-cookie"]
    assert response.status_code == 303 and "HttpOnly" in cookie and "SameSite=lax" in cookie
    _replace_cookie(harness, str(harness.client.cookies.get(COOKIE))[:-3] + "AAA")
    assert harness.client.get("/jobs", follow_redirects=False).status_code == 303


def test_logout_ends_the_old_cookie_too(harness: Harness, pat: str) -> None:
    assert _login(harness, pat, PASSWORD) == 303
    stolen = harness.client.cookies.get(COOKIE)
    page = harness.client.get("/jobs")
    assert page.status_code == 200
    harness.client.post("/logout", data={"csrf_token": csrf_of(page.text)}, follow_redirects=False)
    _replace_cookie(harness, stolen or "")
    assert harness.client.get("/jobs", follow_redirects=False).status_code == 303


def test_every_page_post_refuses_a_missing_or_wrong_csrf_token(harness: Harness, pat: str) -> None:
    assert _login(harness, pat, PASSWORD) == 303
    posts = [route.path for route in routes_of(harness.client.app) if route.is_page and route.method == "POST"]
    assert {"/login", "/logout", "/submit", "/settings/tokens", "/teams/{team_id}/members"} <= set(posts)
    for path in posts:
        url = re.sub(r"\{[^}]+\}", "1", path)
        for sent in ({}, {"csrf_token": "forged"}):
            response = harness.client.post(url, data=sent, follow_redirects=False)
            assert response.status_code == 403, (url, response.status_code)
    assert harness.client.get("/jobs", follow_redirects=False).status_code == 200  # still logged in


def test_settings_page_shows_a_new_token_once_and_revokes_it(harness: Harness) -> None:
    token = csrf_of(harness.client.get("/login").text)
    raw_admin = harness.admin["Authorization"].removeprefix("Bearer ")
    harness.client.post("/login", data={"token": raw_admin, "csrf_token": token}, follow_redirects=False)
    page = harness.client.get("/settings")
    created = harness.client.post(
        "/settings/tokens", data={"name": "laptop", "scope": "read", "csrf_token": csrf_of(page.text)}
    )
    secret = re.search(r'class="token-secret">(sfu_[\w-]+)<', created.text)
    assert created.status_code == 200 and secret and created.headers["cache-control"] == "no-store"
    assert secret.group(1) not in harness.client.get("/settings").text
    assert harness.client.get("/api/v1/jobs", headers=bearer(secret.group(1))).status_code == 200
    listed = harness.client.get("/api/v1/tokens", headers=harness.admin).json()["items"]
    laptop = next(t for t in listed if t["name"] == "laptop")
    revoke = harness.client.post(
        f"/settings/tokens/{laptop['id']}/revoke", data={"csrf_token": csrf_of(page.text)}, follow_redirects=False
    )
    assert revoke.status_code == 303
    assert harness.client.get("/api/v1/jobs", headers=bearer(secret.group(1))).status_code == 401


def test_a_read_only_session_cannot_mint_a_write_token_by_a_crafted_post(harness: Harness) -> None:
    reader = harness.add_user("rita", "default", scope="read")
    form = {
        "token": reader["Authorization"].removeprefix("Bearer "),
        "csrf_token": csrf_of(harness.client.get("/login").text),
    }
    assert harness.client.post("/login", data=form, follow_redirects=False).status_code == 303
    csrf = csrf_of(harness.client.get("/settings").text)
    response = harness.client.post("/settings/tokens", data={"name": "escalate", "scope": "write", "csrf_token": csrf})
    assert response.status_code == 422 and "read-only" in response.text and "sfu_" not in response.text
    assert harness.client.get("/teams/99999999999999999999", follow_redirects=False).status_code == 422
