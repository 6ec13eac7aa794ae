"""Fixtures for API tests: a migrated database (SQLite, and PostgreSQL when configured) behind the real app."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from server_harness import Harness, bearer
from sqlalchemy.engine import make_url

from server.config import Settings
from server.main import create_app
from server.migrate import upgrade
from server.services.auth import ensure_admin


@pytest.fixture
def settings(database_url: str, tmp_path: Path) -> Settings:
    """Small limits, so the limit tests send kilobytes, not megabytes."""
    return Settings(
        home=tmp_path / "home",
        database_url=database_url,
        artifact_root=tmp_path / "artifacts",
        admin_token=None,
        path_roots=[],
        max_body_bytes=2_000_000,
        max_image_bytes=100_000,
        max_image_pixels=256 * 256,
        max_metric_points=500,
    )


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One migrated SQLite file per session, copied per test (the migrations are tested on their own)."""
    path = tmp_path_factory.mktemp("template") / "sfumato.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def harness(settings: Settings, migrated_sqlite: Path) -> Iterator[Harness]:
    url = make_url(settings.database_url)
    if url.get_backend_name() == "sqlite":
        shutil.copyfile(migrated_sqlite, str(url.database))
    else:
        upgrade(settings.database_url)
    app = create_app(settings)
    with TestClient(app) as client:
        with app.state.sessionmaker() as session:
            token = ensure_admin(session, settings)
        assert token is not None
        yield Harness(client, app.state.sessionmaker, settings, bearer(token))
