"""Attacks 5 and 6: the login limit was raced (40 parallel wrong passwords, 24 checked against a limit of 5),
reset by X-Forwarded-For, and never applied to new usernames, so anonymous clients could buy unlimited argon2."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
from argon2 import PasswordHasher
from security_support import add_password_user, csrf_of, serve
from server_harness import Harness

from server.config import Settings
from server.services import auth, password_pool
from server.services.rate_limit import LOGIN_MAX_PER_ADDRESS, LOGIN_MAX_PER_NAME

PASSWORD = "correct horse battery"


class CountingHasher(PasswordHasher):
    """Real argon2 (at its smallest cost) that counts the passwords it checks."""

    def __init__(self) -> None:
        super().__init__(time_cost=1, memory_cost=8, parallelism=1)
        self.checked = 0
        self._lock = threading.Lock()

    def verify(self, hash: str | bytes, password: str | bytes) -> bool:
        with self._lock:
            self.checked += 1
        return super().verify(hash, password)


@pytest.fixture
def hasher(monkeypatch: pytest.MonkeyPatch) -> CountingHasher:
    counting = CountingHasher()
    monkeypatch.setattr(auth, "_hasher", counting)
    monkeypatch.setattr(auth, "_DUMMY_HASH", counting.hash("dummy"))
    return counting


@pytest.fixture
def any_db(db_harness: Harness, hasher: CountingHasher) -> Harness:
    """The app on SQLite, and on PostgreSQL when configured, with user `pat`."""
    add_password_user(db_harness, "pat", PASSWORD)
    return db_harness


@pytest.fixture
def behind_proxy(settings: Settings, hasher: CountingHasher) -> Iterator[Harness]:
    """The app believing forwarded headers from the test client's address, as from a reverse proxy."""
    for harness in serve(settings.model_copy(update={"trusted_proxies": ["testclient"]})):
        add_password_user(harness, "pat", PASSWORD)
        yield harness


def _login(harness: Harness, username: str, password: str, headers: dict[str, str] | None = None) -> int:
    csrf = csrf_of(harness.client.get("/login").text)
    form = {"username": username, "password": password, "csrf_token": csrf}
    return harness.client.post("/login", data=form, headers=headers or {}, follow_redirects=False).status_code


def test_forty_parallel_wrong_passwords_check_at_most_five(any_db: Harness, hasher: CountingHasher) -> None:
    csrf = csrf_of(any_db.client.get("/login").text)
    hasher.checked = 0
    form = {"username": "pat", "password": "wrong password", "csrf_token": csrf}

    def attempt(_: int) -> int:
        return any_db.client.post("/login", data=form, follow_redirects=False).status_code

    with ThreadPoolExecutor(40) as pool:
        codes = list(pool.map(attempt, range(40)))
    assert hasher.checked <= LOGIN_MAX_PER_NAME
    assert codes.count(401) <= LOGIN_MAX_PER_NAME and codes.count(429) >= 40 - LOGIN_MAX_PER_NAME


def test_x_forwarded_for_does_not_reset_the_limit(harness: Harness, hasher: CountingHasher) -> None:
    add_password_user(harness, "pat", PASSWORD)
    assert [_login(harness, "pat", "wrong password") for _ in range(LOGIN_MAX_PER_NAME)] == [401] * 5
    hasher.checked = 0
    assert _login(harness, "pat", PASSWORD, {"X-Forwarded-For": "203.0.113.9"}) == 429
    assert hasher.checked == 0


def test_x_forwarded_for_is_believed_from_a_trusted_proxy(behind_proxy: Harness) -> None:
    assert [_login(behind_proxy, "pat", "wrong", {"X-Forwarded-For": "203.0.113.9"}) for _ in range(6)][-1] == 429
    assert _login(behind_proxy, "pat", PASSWORD, {"X-Forwarded-For": "198.51.100.7"}) == 303


def test_one_address_is_limited_across_usernames(harness: Harness, hasher: CountingHasher) -> None:
    codes = [_login(harness, f"nobody-{i}", "wrong password") for i in range(LOGIN_MAX_PER_ADDRESS + 3)]
    assert codes == [401] * LOGIN_MAX_PER_ADDRESS + [429] * 3
    assert hasher.checked == LOGIN_MAX_PER_ADDRESS


def test_a_successful_login_gives_its_attempts_back(harness: Harness) -> None:
    add_password_user(harness, "pat", PASSWORD)
    assert [_login(harness, "pat", PASSWORD) for _ in range(LOGIN_MAX_PER_NAME + 2)] == [303] * 7


def test_logins_beyond_the_hashing_pool_are_refused_without_holding_a_request_thread(harness: Harness) -> None:
    held = 0
    while password_pool.SLOTS.acquire(blocking=False):
        held += 1
    try:
        assert _login(harness, "pat", "any password") == 503
        assert harness.client.get("/api/v1/jobs", headers=harness.admin).status_code == 200
    finally:
        for _ in range(held):
            password_pool.SLOTS.release()
    assert held == password_pool.HASHING_THREADS + password_pool.HASHING_WAITING
