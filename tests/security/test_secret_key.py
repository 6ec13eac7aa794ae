"""Attack 1: a cookie signed with a published key ("change-me") opened /settings as the admin.

A server on a shared database now refuses a missing, short, published or guessable SFUMATO_SECRET_KEY, naming
it (guessable keys: test_key_strength.py); the embedded platform signs with a random key of its own, made once in
its state folder (mode 0600).
"""

from __future__ import annotations

import re
import stat
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from itsdangerous import URLSafeTimedSerializer

from server.api.page_session import COOKIE
from server.config import Settings
from server.secret_key import KEY_FILE, WeakSecretKey, generate_key, key_problem
from sfumato.app import create_app

REPO = Path(__file__).resolve().parents[2]
UNREACHED_POSTGRES = "postgresql+psycopg://sfumato@127.0.0.1:1/sfumato"  # create_app does not connect


def test_the_compose_file_gives_the_secret_key_no_default() -> None:
    line = next(li for li in (REPO / "docker-compose.yml").read_text().splitlines() if "SFUMATO_SECRET_KEY:" in li)
    assert ":-" not in line and "change-me" not in line
    assert ":?" in line  # compose refuses to start without it


@pytest.mark.parametrize("key", ["", "change-me", "x" * 31])
def test_a_server_on_postgres_refuses_a_missing_short_or_published_key(tmp_path: Path, key: str) -> None:
    with pytest.raises(WeakSecretKey, match="SFUMATO_SECRET_KEY"):
        create_app(Settings(home=tmp_path, database_url=UNREACHED_POSTGRES, secret_key=key))


def test_a_server_on_postgres_signs_page_sessions_with_a_generated_key(tmp_path: Path) -> None:
    key = generate_key()
    app = create_app(Settings(home=tmp_path, database_url=UNREACHED_POSTGRES, secret_key=key))
    assert app.state.settings.secret_key == key


def test_the_embedded_platform_makes_its_key_once_readable_by_its_owner_only(
    migrated_sqlite_url: str, tmp_path: Path
) -> None:
    settings = Settings(home=tmp_path / "home", database_url=migrated_sqlite_url)
    first = create_app(settings).state.settings.secret_key
    again = create_app(settings).state.settings.secret_key
    key_file = tmp_path / "home" / KEY_FILE
    assert first == again == key_file.read_text().strip() and key_problem(first) is None
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


def test_a_cookie_signed_with_change_me_does_not_open_the_settings_page(
    migrated_sqlite_url: str, tmp_path: Path
) -> None:
    app = create_app(Settings(home=tmp_path / "home", database_url=migrated_sqlite_url))
    forged = URLSafeTimedSerializer("change-me", salt="sfumato-page-session").dumps(
        {"uid": 1, "csrf": "c", "w": True, "g": 0, "t": None}
    )
    with TestClient(app) as client:
        client.cookies.set(COOKIE, forged)
        response = client.get("/settings", follow_redirects=False)
    assert response.status_code == 303 and re.match(r"/login\?next=", response.headers["location"])
