"""Fixtures for the hostile-input tests: the API harness of tests/server on a migrated SQLite copy."""

from __future__ import annotations

import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "server"))

from server_harness import Harness, bearer

from server.config import Settings
from server.main import create_app
from server.migrate import upgrade
from server.services.auth import ensure_admin


@pytest.fixture(scope="session")
def migrated_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("security-template") / "sfumato.db"
    upgrade(f"sqlite:///{path}")
    return path


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(
        home=tmp_path / "home",
        database_url=f"sqlite:///{tmp_path / 'sfumato.db'}",
        artifact_root=tmp_path / "artifacts",
        secret_key="security-tests",
        max_body_bytes=200_000,
        max_image_bytes=100_000,
        max_image_pixels=256 * 256,
        max_metric_points=500,
    )


@pytest.fixture
def harness(settings: Settings, migrated_template: Path, tmp_path: Path) -> Iterator[Harness]:
    shutil.copyfile(migrated_template, tmp_path / "sfumato.db")
    app = create_app(settings)
    with TestClient(app) as client:
        with app.state.sessionmaker() as session:
            token = ensure_admin(session, settings)
        assert token is not None
        yield Harness(client, app.state.sessionmaker, settings, bearer(token))
