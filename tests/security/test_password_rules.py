"""Issue 34, item 5: the password branches nothing tested. A password has 8 to 256 characters wherever it is
set (422 naming the field); a longer one is refused at login without hashing it; a hash made with older argon2
parameters is rehashed with the current ones at the next successful login, and only then."""

from __future__ import annotations

import pytest
from argon2 import PasswordHasher
from security_support import add_password_user, csrf_of, login_with_password
from server_harness import Harness
from sqlalchemy import select, update

from server.config import Settings
from server.models import User
from server.services import auth
from server.services.errors import FieldErrors

PASSWORD = "correct horse battery"
OLDER_HASHER = PasswordHasher(time_cost=2, memory_cost=16, parallelism=1)


@pytest.mark.parametrize("length", [auth.MIN_PASSWORD, auth.MAX_PASSWORD])
def test_a_password_of_8_to_256_characters_is_accepted(harness: Harness, length: int) -> None:
    add_password_user(harness, "pat", "p" * length)
    assert login_with_password(harness, "pat", "p" * length) == 303


@pytest.mark.parametrize("length", [auth.MIN_PASSWORD - 1, auth.MAX_PASSWORD + 1])
def test_a_password_outside_8_to_256_characters_is_refused_naming_the_field(harness: Harness, length: int) -> None:
    with pytest.raises(FieldErrors) as refused:
        add_password_user(harness, "pat", "p" * length)
    assert refused.value.detail == [{"field": "password", "message": "a password has 8 to 256 characters"}]


def test_a_new_password_outside_the_rule_is_refused_on_the_settings_page(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    assert login_with_password(harness, "pat", PASSWORD) == 303
    form = {
        "current_password": PASSWORD,
        "new_password": "short",
        "csrf_token": csrf_of(harness.client.get("/settings").text),
    }
    answer = harness.client.post("/settings/password", data=form)
    assert answer.status_code == 422 and "new_password: a password has 8 to 256 characters" in answer.text


def test_a_short_sfumato_admin_password_is_refused_at_start_naming_it(harness: Harness) -> None:
    with harness.session() as session, pytest.raises(FieldErrors) as refused:
        auth.ensure_admin(session, Settings(database_url=harness.settings.database_url, admin_password="short"))
    assert refused.value.detail[0]["field"] == "SFUMATO_ADMIN_PASSWORD"


def test_a_login_with_a_password_over_256_characters_is_refused_without_hashing_it(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    add_password_user(harness, "pat", PASSWORD)
    hashed: list[str] = []
    monkeypatch.setattr(auth, "in_hashing_pool", lambda work: hashed.append("work") or work())
    assert login_with_password(harness, "pat", PASSWORD + "x" * auth.MAX_PASSWORD) == 401
    assert hashed == []


def _stored_hash(harness: Harness) -> str:
    with harness.session() as session:
        stored = session.scalar(select(User.password_hash).where(User.username == "pat"))
    assert stored is not None
    return stored


def _store_older_hash(harness: Harness) -> str:
    older = OLDER_HASHER.hash(PASSWORD)
    with harness.session() as session:
        session.execute(update(User).where(User.username == "pat").values(password_hash=older))
        session.commit()
    return older


def test_a_hash_with_older_argon2_parameters_is_rehashed_at_the_next_login(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    older = _store_older_hash(harness)
    assert auth._hasher.check_needs_rehash(older)
    assert login_with_password(harness, "pat", PASSWORD) == 303
    rehashed = _stored_hash(harness)
    assert rehashed != older and not auth._hasher.check_needs_rehash(rehashed)
    assert login_with_password(harness, "pat", PASSWORD) == 303


def test_a_hash_with_the_current_argon2_parameters_is_kept_at_login(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    current = _stored_hash(harness)
    assert login_with_password(harness, "pat", PASSWORD) == 303
    assert _stored_hash(harness) == current


def test_a_failed_login_leaves_an_older_hash_as_it_is(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    older = _store_older_hash(harness)
    assert login_with_password(harness, "pat", "not the password") == 401
    assert _stored_hash(harness) == older
