"""Fixtures for API tests: a migrated database (SQLite, and PostgreSQL when configured) behind the real app."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from server_harness import Harness, Headers, bearer

from server.config import Settings
from server.services.auth import ensure_admin
from sfumato.app import create_app


@pytest.fixture
def settings(migrated_database_url: str, tmp_path: Path) -> Settings:
    """Small limits, so the limit tests send kilobytes, not megabytes."""
    return Settings(
        home=tmp_path / "home",
        database_url=migrated_database_url,
        artifact_root=tmp_path / "artifacts",
        admin_token=None,
        secret_key=secrets.token_hex(32),
        path_roots=[],
        max_body_bytes=2_000_000,
        max_image_bytes=100_000,
        max_image_pixels=256 * 256,
        max_metric_points=500,
    )


@pytest.fixture
def harness(settings: Settings) -> Iterator[Harness]:
    app = create_app(settings)
    with TestClient(app) as client:
        with app.state.sessionmaker() as session:
            token = ensure_admin(session, settings)
        assert token is not None
        yield Harness(client, app.state.sessionmaker, settings, bearer(token))


@pytest.fixture
def lab(harness: Harness) -> Headers:
    """The admin of team lab (lena); with `studio`, two teams that must not see each other's things."""
    return harness.add_user("lena", "lab", "admin")


@pytest.fixture
def studio(harness: Harness) -> Headers:
    """The admin of team studio (sam)."""
    return harness.add_user("sam", "studio", "admin")
