"""Attacks 1 and 6 against the real `sfumato server` process: it (and `sfumato worker`) refuses a weak session key
(published, or guessable: tests/security/test_key_strength.py) on PostgreSQL, and its login limit is not reset by
X-Forwarded-For (uvicorn believed it from any local client)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from security_support import bootstrapped_server

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"


@pytest.mark.parametrize("command", [["server", "--workers", "1"], ["worker"]], ids=["server", "worker"])
@pytest.mark.parametrize(
    ("key", "problem"),
    [
        ("change-me", "is a published placeholder"),
        ("a" * 32, "is guessable"),  # issue 33, "Why" 11: these two started the server
        ("change-me-change-me-change-me-xx", "is guessable"),
    ],
    ids=["published", "repeated", "placeholder_words"],
)
def test_sfumato_server_and_worker_on_postgres_refuse_a_weak_key_naming_it_and_keygen(
    tmp_path: Path, command: list[str], key: str, problem: str
) -> None:
    """The server signs page sessions with it, the worker the node tokens of multi-node jobs."""
    env = {
        **os.environ,
        "SFUMATO_HOME": str(tmp_path),
        "SFUMATO_DATABASE_URL": "postgresql+psycopg://sfumato@127.0.0.1:1/sfumato",
        "SFUMATO_SECRET_KEY": key,
    }
    done = subprocess.run(
        [sys.executable, "-m", "sfumato.cli", *command],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    said = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 2
    assert f"SFUMATO_SECRET_KEY {problem}" in said and "SFUMATO_SECRET_KEY=$(sfumato keygen)" in said


@pytest.fixture
def live_server(tmp_path: Path) -> Iterator[str]:
    """`sfumato server --bootstrap` on an embedded platform, the admin with a password."""
    with bootstrapped_server(tmp_path, SFUMATO_ADMIN_PASSWORD=PASSWORD) as (url, _log):
        yield url


def test_x_forwarded_for_from_a_local_client_does_not_reset_the_login_limit(live_server: str) -> None:
    with httpx.Client(base_url=live_server) as client:
        codes = []
        for i in range(6):
            page = client.get("/login").text
            csrf = re.search(r'name="csrf-token" content="([^"]+)"', page)
            assert csrf
            form = {"username": "admin", "password": "wrong password", "csrf_token": csrf.group(1)}
            codes.append(client.post("/login", data=form, headers={"X-Forwarded-For": f"203.0.113.{i}"}).status_code)
    assert codes == [401] * 5 + [429]
