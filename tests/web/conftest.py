"""Page tests with FastAPI's TestClient on a temp SQLite platform."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import PASSWORD, World, make_app, seed


@pytest.fixture
def app(tmp_path: Path) -> FastAPI:
    return make_app(tmp_path)


@pytest.fixture
def world(app: FastAPI) -> World:
    return seed(app)


@pytest.fixture
def anon(app: FastAPI, world: World) -> Iterator[TestClient]:
    with TestClient(app, follow_redirects=False) as client:
        yield client


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf-token" content="([^"]+)"', html)
    assert match, "no CSRF meta tag"
    return match.group(1)


@pytest.fixture
def client(anon: TestClient) -> TestClient:
    """Logged in as the admin with username and password."""
    token = csrf_of(anon.get("/login").text)
    response = anon.post("/login", data={"username": "ada", "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 303, response.text
    return anon
