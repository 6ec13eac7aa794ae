"""Attack 2: revoking a token did not end the web session opened with it (a 7-day cookie that could mint
new tokens). A page session now records its credential and every request checks it."""

from __future__ import annotations

from datetime import timedelta

from fastapi.testclient import TestClient
from security_support import add_password_user, csrf_of, login_with_password, login_with_token
from server_harness import Harness
from sqlalchemy import update

from server.models import ApiToken, utcnow

PASSWORD = "correct horse battery"


def _settings_status(harness: Harness) -> int:
    return harness.client.get("/settings", follow_redirects=False).status_code


def test_revoking_a_token_ends_the_page_session_it_opened(harness: Harness) -> None:
    lena = harness.add_user("lena", "default")
    assert login_with_token(harness, lena) == 303 and _settings_status(harness) == 200
    token_id = harness.client.get("/api/v1/tokens", headers=lena).json()["items"][0]["id"]
    assert harness.client.get("/api/v1/jobs").status_code == 200  # the API reads with the page's cookie
    assert harness.client.delete(f"/api/v1/tokens/{token_id}", headers=lena).status_code == 204
    assert _settings_status(harness) == 303
    assert harness.client.get("/api/v1/jobs").status_code == 401


def test_an_expired_token_ends_the_page_session_it_opened(harness: Harness) -> None:
    lena = harness.add_user("lena", "default")
    assert login_with_token(harness, lena) == 303 and _settings_status(harness) == 200
    with harness.session() as session:
        session.execute(update(ApiToken).values(expires_at=utcnow() - timedelta(seconds=1)))
        session.commit()
    assert _settings_status(harness) == 303


def test_the_session_cookie_lasts_no_longer_than_its_token(harness: Harness) -> None:
    lena = harness.add_user("lena", "default", expires_at=utcnow() + timedelta(hours=1))
    form = {
        "token": lena["Authorization"].removeprefix("Bearer "),
        "csrf_token": csrf_of(harness.client.get("/login").text),
    }
    cookie = harness.client.post("/login", data=form, follow_redirects=False).headers["set-cookie"]
    max_age = int(cookie.split("Max-Age=")[1].split(";")[0])
    assert 3500 <= max_age <= 3600


def test_a_new_password_ends_the_other_password_sessions(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    assert login_with_password(harness, "pat", PASSWORD) == 303 and _settings_status(harness) == 200
    with TestClient(harness.client.app) as elsewhere:
        other = Harness(elsewhere, harness.sessions, harness.settings, harness.admin)
        assert login_with_password(other, "pat", PASSWORD) == 303
        change = {"current_password": PASSWORD, "new_password": "another long password"}
        change["csrf_token"] = csrf_of(elsewhere.get("/settings").text)
        assert elsewhere.post("/settings/password", data=change).status_code == 200
        assert elsewhere.get("/settings", follow_redirects=False).status_code == 200  # the changing one goes on
    assert _settings_status(harness) == 303
