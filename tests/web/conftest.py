"""Page tests with FastAPI's TestClient on a temp SQLite platform."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import PASSWORD, World, build_home, csrf_of, make_app


@pytest.fixture(scope="session")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, World]:
    """Migrated and seeded once; each test gets a copy."""
    home = tmp_path_factory.mktemp("template")
    return home, build_home(home)


@pytest.fixture
def world(template: tuple[Path, World]) -> World:
    return template[1]


@pytest.fixture
def app(template: tuple[Path, World], tmp_path: Path) -> FastAPI:
    home = tmp_path / "home"
    shutil.copytree(template[0], home)
    return make_app(home)


@pytest.fixture
def anon(app: FastAPI, world: World) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as client:
        yield client


@pytest.fixture
def client(anon: TestClient) -> TestClient:
    """Logged in as the admin with username and password."""
    token = csrf_of(anon.get("/login").text)
    response = anon.post("/login", data={"username": "ada", "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 303, response.text
    return anon
