"""The submit page's refusals on the paths that do not pass the API's door: a spec whose values the database
cannot store, and a clone into a full queue. Each is shown on the form, and nothing is stored."""

from __future__ import annotations

import json

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of
from sqlalchemy import func, select

from server.models import Job, User


def _jobs(app: FastAPI) -> int:
    with app.state.sessionmaker() as session:
        return session.scalar(select(func.count()).select_from(Job)) or 0


def test_a_json_spec_with_an_integer_beyond_64_bits_is_shown_naming_the_field(client: TestClient, app: FastAPI) -> None:
    before = _jobs(app)
    token = csrf_of(client.get("/submit?mode=json").text)
    spec_json = json.dumps({"name": "huge", "seed": 2**70})
    response = client.post("/submit", data={"csrf_token": token, "mode": "json", "spec_json": spec_json})
    assert response.status_code == 422 and "<code>seed</code>" in response.text
    assert _jobs(app) == before


def test_a_clone_into_a_full_queue_is_refused_naming_the_limit(client: TestClient, world: World, app: FastAPI) -> None:
    source = world.finished[0].id
    with app.state.sessionmaker() as session:
        ada = session.scalar(select(User.id).where(User.username == "ada"))
        queued = session.scalar(select(func.count()).where(Job.status == "queued", Job.owner_id == ada)) or 0
        spec_json = json.dumps(session.get_one(Job, source).spec)
    app.state.settings.max_queued_per_user = queued
    before = _jobs(app)
    token = csrf_of(client.get(f"/submit?from={source}&mode=json").text)
    response = client.post("/submit", data={"csrf_token": token, "mode": "json", "spec_json": spec_json})
    assert response.status_code == 422 and "SFUMATO_MAX_QUEUED_PER_USER" in response.text
    assert _jobs(app) == before
