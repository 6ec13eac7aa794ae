"""The advisor's pages: Advise from the submit form (its errors shown there, nothing stored), the answer's page,
Submit with this executor, and a job from an advice showing predicted against measured figures."""

from __future__ import annotations

import json

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of

from server.models import Advice, Job
from tests.spec.advice_fixture import SPEC_DATA


def advise(client: TestClient, **fields: str) -> object:
    token = csrf_of(client.get("/submit").text)
    spec = {**SPEC_DATA, "resources": {"device_type": "cuda"}}  # the world's host has GPUs
    data = {"csrf_token": token, "mode": "json", "spec_json": json.dumps(spec), **fields}
    return client.post("/advise", data=data, follow_redirects=False)


def test_advise_from_the_submit_form_queues_a_probe_and_opens_the_advice(client: TestClient, app: FastAPI) -> None:
    response = advise(client, memory_budget="40GiB")
    assert response.status_code == 303, response.text  # type: ignore[attr-defined]
    page = client.get(response.headers["location"])  # type: ignore[attr-defined]
    assert "Probing every executor on a cuda host" in page.text and "memory budget 40.0 GiB" in page.text


def test_a_bad_budget_is_shown_on_the_submit_form_and_nothing_is_stored(client: TestClient, app: FastAPI) -> None:
    response = advise(client, memory_budget="plenty")
    assert response.status_code == 422  # type: ignore[attr-defined]
    assert "memory_budget" in response.text and "is not a size" in response.text  # type: ignore[attr-defined]
    with app.state.sessionmaker() as session:
        assert session.query(Advice).count() == 1  # the world's own


def test_the_answer_marks_the_recommended_executor_and_offers_each_predicted_one_that_fits(
    client: TestClient, world: World
) -> None:
    assert world.advice is not None
    page = client.get(f"/advice/{world.advice.id}").text
    assert "recommended: native 1.00\N{MULTIPLICATION SIGN}, 12.0 GiB, bitwise exact" in page
    assert "Submit with native" in page and "Submit with jagg" not in page  # jagg: no prediction
    assert "lean_retain 2.61\N{MULTIPLICATION SIGN}" in page and "Submit with lean_retain" not in page  # 20 > 16 GiB
    assert "data-advice-chart" in page


def test_submit_with_this_executor_creates_the_job_linked_to_the_advice(
    client: TestClient, world: World, app: FastAPI
) -> None:
    assert world.advice is not None
    token = csrf_of(client.get(f"/advice/{world.advice.id}").text)
    response = client.post(
        f"/advice/{world.advice.id}/submit", data={"csrf_token": token, "executor": "native"}, follow_redirects=False
    )
    assert response.status_code == 303
    job_id = int(response.headers["location"].rsplit("/", 1)[1])
    with app.state.sessionmaker() as session:
        job = session.get_one(Job, job_id)
        assert (job.executor, job.advice_id) == ("native", world.advice.id)


def test_a_job_from_an_advice_shows_predicted_against_measured(client: TestClient, world: World) -> None:
    page = client.get(f"/jobs/{world.finished[0].id}").text
    assert "Predicted against measured" in page and f"advice #{world.advice.id}" in page  # type: ignore[union-attr]
