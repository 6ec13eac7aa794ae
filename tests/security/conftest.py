"""Fixtures for the hostile-input tests: the API harness of tests/server on a migrated SQLite copy."""

from __future__ import annotations

import secrets
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from argon2 import PasswordHasher

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from security_support import TwoTeams, send_telemetry, serve
from server_harness import Harness

from server.config import Settings
from server.secret_key import generate_key
from server.services import auth


@pytest.fixture
def settings(migrated_sqlite_url: str, tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path / "home",
        database_url=migrated_sqlite_url,
        artifact_root=tmp_path / "artifacts",
        secret_key=generate_key(),
        max_body_bytes=200_000,
        max_image_bytes=100_000,
        max_image_pixels=256 * 256,
        max_metric_points=500,
    )


@pytest.fixture
def harness(settings: Settings) -> Iterator[Harness]:
    yield from serve(settings)


@pytest.fixture
def db_harness(migrated_database_url: str, tmp_path: Path) -> Iterator[Harness]:
    """The app on SQLite, and on PostgreSQL when configured (the races and stored values that differ)."""
    settings = Settings(
        home=tmp_path / "home",
        database_url=migrated_database_url,
        artifact_root=tmp_path / "artifacts",
        secret_key=secrets.token_hex(32),
    )
    yield from serve(settings)


@pytest.fixture
def two_teams(harness: Harness) -> TwoTeams:
    lab = harness.add_user("lena", "lab", "admin")
    studio = harness.add_user("sam", "studio", "admin")
    job_id = harness.submit_ok({"name": "lab-job"}, headers=lab)
    token = harness.start_job(job_id)
    return TwoTeams(lab, studio, job_id, token, send_telemetry(harness, job_id, token))


@pytest.fixture(autouse=True)
def cheap_argon2(monkeypatch: pytest.MonkeyPatch) -> None:
    """argon2 at its smallest cost: these tests check who gets in, not how hard a hash is to crack."""
    hasher = PasswordHasher(time_cost=1, memory_cost=8, parallelism=1)
    monkeypatch.setattr(auth, "_hasher", hasher)
    monkeypatch.setattr(auth, "_DUMMY_HASH", hasher.hash("dummy"))
