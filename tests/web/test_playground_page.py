"""A job's playground page: its form queues a run through the API's own call (the checkpoint steps to choose from,
the job's sampler as the placeholder), bad input comes back beside its field with nothing queued, and a run shows
its grid (base and trained side by side, labelled) once written, the runs polling only while one is drawing."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of
from sqlalchemy import func, select

from server.models import Artifact, Job
from server.states import JobKind, JobStatus


def add_checkpoints(app: FastAPI, job_id: int, steps: tuple[int, ...] = (10, 20)) -> None:
    with app.state.sessionmaker() as session:
        for step in steps:
            session.add(Artifact(job_id=job_id, attempt=1, kind="checkpoint", name=f"step-{step}", step=step,
                                 path=f"checkpoints/step-{step}"))  # fmt: skip
        session.commit()


def playground_jobs(app: FastAPI) -> int:
    with app.state.sessionmaker() as session:
        return int(session.scalar(select(func.count()).where(Job.kind == JobKind.PLAYGROUND)) or 0)


def draw(client: TestClient, job_id: int, **form: str) -> tuple[int, str]:
    csrf = csrf_of(client.get(f"/jobs/{job_id}/playground").text)
    response = client.post(f"/jobs/{job_id}/playground", data={**form, "csrf_token": csrf}, follow_redirects=True)
    return response.status_code, response.text


def test_the_form_queues_a_run_on_the_chosen_checkpoint_and_the_runs_poll_while_it_draws(
    app: FastAPI, client: TestClient, world: World
) -> None:
    job_id = world.running.id
    add_checkpoints(app, job_id)
    page = client.get(f"/jobs/{job_id}/playground").text
    assert '<option value="10" >step 10</option>' in page and '<option value="20" >step 20</option>' in page
    status, page = draw(client, job_id, prompts="a red apple\n\na cat", seeds="3, 4", step="10", guidance_scale="4.5")
    assert status == 200, page
    run = re.search(r'id="run-(\d+)"', page)
    assert run is not None and f'hx-get="/jobs/{job_id}/playground/runs" hx-trigger="every 2s"' in page
    with app.state.sessionmaker() as session:
        task = session.get_one(Job, int(run.group(1))).task
    assert task is not None
    assert (task["prompts"], task["seeds"], task["source"]["step"], task["sampler"]["guidance_scale"]) == (
        ["a red apple", "a cat"],
        [3, 4],
        10,
        4.5,
    )


def test_bad_input_comes_back_beside_its_field_and_nothing_is_queued(
    app: FastAPI, client: TestClient, world: World
) -> None:
    add_checkpoints(app, world.running.id)
    status, page = draw(client, world.running.id, prompts="a cat", seeds="1, two", steps="500")
    assert status == 422
    errors = dict(re.findall(r'<small class="field-error" id="e-(\w+)" data-field="\w+">([^<]*)</small>', page))
    assert set(errors) == {"seeds", "steps"} and "100" in errors["steps"]
    assert (
        '<textarea id="f-prompts" name="prompts" rows="4" placeholder="a red apple on a table" >a cat</textarea>'
        in page
    )
    assert playground_jobs(app) == 0


def test_a_drawn_run_shows_its_grid_labelled_and_the_runs_stop_polling(
    app: FastAPI, client: TestClient, world: World
) -> None:
    job_id = world.running.id
    add_checkpoints(app, job_id)
    _, page = draw(client, job_id, prompts="a red apple")
    run_id = int(re.search(r'id="run-(\d+)"', page).group(1))  # type: ignore[union-attr]
    with app.state.sessionmaker() as session:
        session.get_one(Job, run_id).status = JobStatus.SUCCEEDED
        grid = Artifact(job_id=run_id, attempt=1, kind="playground", name="grid", step=20, path="playground/grid.png",
                        sha256="0" * 64, packing="file", store_key="held")  # fmt: skip
        session.add(grid)
        session.commit()
        grid_id = grid.id
    runs = client.get(f"/jobs/{job_id}/playground/runs").text
    assert f'<img src="/api/v1/jobs/{run_id}/artifacts/{grid_id}/download"' in runs
    assert "Columns: the base model, then the checkpoint at step 20" in runs
    assert "hx-trigger" not in runs


def test_the_job_page_links_to_its_playground(client: TestClient, world: World) -> None:
    assert (
        f'<a href="/jobs/{world.running.id}/playground">Playground</a>' in client.get(f"/jobs/{world.running.id}").text
    )


def test_a_model_versions_playground_draws_on_its_checkpoint_and_lists_the_runs_saved_with_it(
    app: FastAPI, client: TestClient, world: World
) -> None:
    job_id = world.running.id
    add_checkpoints(app, job_id)
    auth = {"Authorization": f"Bearer {world.token}"}
    registered = client.post("/api/v1/models", json={"name": "sunset", "job_id": job_id, "step": 10}, headers=auth)
    assert registered.status_code == 201, registered.text
    model_page = client.get("/models/sunset").text
    url = re.search(r'href="(/models/sunset/versions/1/playground\?team=[^"]+)"', model_page)
    assert url is not None
    page = client.get(url.group(1)).text
    assert 'id="f-step"' not in page  # the version's checkpoint is its own
    drawn = client.post(
        url.group(1), data={"prompts": "a red apple", "csrf_token": csrf_of(page)}, follow_redirects=True
    )
    assert drawn.status_code == 200, drawn.text
    [run_id] = re.findall(r'id="run-(\d+)"', drawn.text)
    draw(client, job_id, prompts="a cat", step="20")  # the job's other checkpoint: not saved with the version
    assert re.findall(r'id="run-(\d+)"', client.get(url.group(1)).text) == [run_id]
