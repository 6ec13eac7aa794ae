"""The advice's three faces render one server answer: the API, `sfumato advice` / `sfumato show` and the pages show
the same intervals and the same recommendation; a job from the advice that ran beside another job shows the one
shared-host warning on each; "Submit with …" from the page and the CLI submits an exclusive job."""

from __future__ import annotations

import json
from datetime import timedelta
from html import unescape
from typing import Any

import httpx
from fastapi import FastAPI
from page_fixtures import PASSWORD, World, csrf_of, served
from sqlalchemy import select
from typer.testing import CliRunner

from server.models import Allocation, Device, Job
from sfumato.cli import app as cli

WARNING = "the job ran while 1 other job(s) held devices on gpu-node-1: its samples/s is not lean_retain's alone"


def _logged_in(http: httpx.Client) -> None:
    token = csrf_of(http.get("/login").text)
    response = http.post("/login", data={"username": "ada", "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 303, response.text


def _api(http: httpx.Client, world: World, path: str) -> Any:
    response = http.get(f"/api/v1{path}", headers={"Authorization": f"Bearer {world.token}"})
    assert response.status_code == 200, response.text
    return response.json()


def _cli(url: str, world: World, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--url", url, "--token", world.token, *args], env={"COLUMNS": "250"})
    assert result.exit_code == 0, result.output
    return result.output


def _ran_beside_another(app: FastAPI, world: World) -> None:
    """The advised lean_retain job and the lean_reweight job held devices of one host at the same time."""
    with app.state.sessionmaker() as session:
        first, second = (session.get_one(Job, job.id) for job in world.finished)
        devices = session.scalars(select(Device).order_by(Device.index)).all()
        began = first.started_at
        assert began is not None
        for job, device in ((first, devices[3]), (second, devices[0])):
            session.add(
                Allocation(
                    job_id=job.id,
                    attempt=1,
                    device_id=device.id,
                    host_id=device.host_id,
                    created_at=began,
                    released_at=began + timedelta(minutes=2),
                )
            )
        session.commit()


def test_the_api_the_cli_and_the_page_show_the_same_intervals_and_recommendation(app: FastAPI, world: World) -> None:
    assert world.advice is not None
    with served(app) as url, httpx.Client(base_url=url) as http:
        answer = _api(http, world, f"/advice/{world.advice.id}")["answer"]
        as_json = _cli(url, world, "advice", str(world.advice.id), "--json")
        as_text = _cli(url, world, "advice", str(world.advice.id))
        _logged_in(http)
        page = unescape(http.get(f"/advice/{world.advice.id}").text)
    retain = next(row for row in answer["executors"] if row["executor"] == "lean_retain")
    interval = retain["speedup_interval"]
    shown = f"[{interval['low']:.2f}, {interval['high']:.2f}]"
    assert shown == "[2.03, 3.34]"
    assert f'<small class="ci">{shown}</small>' in page and shown in as_text
    assert answer["summary"] in page and answer["summary"] in as_text
    assert json.loads(as_json)["answer"] == answer


def test_a_job_from_the_advice_that_ran_shared_shows_the_warning_on_every_face(app: FastAPI, world: World) -> None:
    _ran_beside_another(app, world)
    job_id = world.finished[0].id
    with served(app) as url, httpx.Client(base_url=url) as http:
        prediction = _api(http, world, f"/jobs/{job_id}/prediction")
        advice = _api(http, world, f"/advice/{prediction['advice_id']}")
        shown = _cli(url, world, "show", str(job_id))
        _logged_in(http)
        page = unescape(http.get(f"/jobs/{job_id}").text)
    assert prediction["shared_warning"] == WARNING
    assert advice["submitted"][0]["shared_warning"] == WARNING
    assert f"warning: not like with like: {WARNING}" in " ".join(shown.split())
    assert f"Not like with like: {WARNING}." in page


def test_a_job_from_the_advice_that_ran_alone_shows_no_warning(app: FastAPI, world: World) -> None:
    with served(app) as url:
        shown = _cli(url, world, "show", str(world.finished[0].id))
    assert "predicted " in shown and "not like with like" not in shown


def test_submit_with_from_the_page_and_the_cli_submits_an_exclusive_job(app: FastAPI, world: World) -> None:
    assert world.advice is not None
    with served(app) as url, httpx.Client(base_url=url) as http:
        from_cli = _cli(url, world, "advice", str(world.advice.id), "--submit", "native", "--json")
        _logged_in(http)
        csrf = csrf_of(http.get(f"/advice/{world.advice.id}").text)
        sent = http.post(f"/advice/{world.advice.id}/submit", data={"csrf_token": csrf, "executor": "native"})
        assert sent.status_code == 303, sent.text
    page_job = int(sent.headers["location"].rsplit("/", 1)[1])
    cli_job = json.loads(from_cli)["submitted_job"]["id"]
    with app.state.sessionmaker() as session:
        for job_id, executor in ((cli_job, "native"), (page_job, "native")):
            job = session.get_one(Job, job_id)
            assert (job.executor, job.advice_id, job.spec["resources"]["exclusive"]) == (
                executor,
                world.advice.id,
                True,
            )
