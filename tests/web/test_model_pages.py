"""The model registry's pages: the job page's "Register as model" form makes a version from the chosen checkpoint
and opens the model's page, which shows each version's lineage (the job's reward at the step as the job's own
figures give it), and its alias form sets and moves an alias."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of

from server.models import Artifact
from server.services.model_lineage import training_reward_at
from web.pages.render import num


def add_checkpoints(app: FastAPI, job_id: int, steps: list[int]) -> None:
    with app.state.sessionmaker() as session:
        session.add_all(
            Artifact(
                job_id=job_id, attempt=1, kind="checkpoint", name=f"step-{s}", step=s, path=f"checkpoints/step-{s}"
            )
            for s in steps
        )
        session.commit()


def register(client: TestClient, job_id: int, name: str, step: int) -> str:
    page = client.get(f"/jobs/{job_id}").text
    response = client.post(
        f"/jobs/{job_id}/register-model", data={"name": name, "step": str(step), "csrf_token": csrf_of(page)}
    )
    assert response.status_code == 303, response.text
    return response.headers["location"]


def test_the_job_page_offers_its_checkpoints_to_register_as_a_model(
    client: TestClient, app: FastAPI, world: World
) -> None:
    add_checkpoints(app, world.running.id, [10, 20])
    page = client.get(f"/jobs/{world.running.id}").text
    form = page.split('class="inline register-model"', 1)[1].split("</form>", 1)[0]
    assert re.findall(r'<option value="(\d+)">', form) == ["20", "10"]
    assert "Register as model" in form


def test_registering_from_the_job_page_opens_the_models_page_with_the_versions_lineage(
    client: TestClient, app: FastAPI, world: World
) -> None:
    add_checkpoints(app, world.running.id, [10, 20])
    target = register(client, world.running.id, "sunset", 10)
    assert target == "/models/sunset?team=vision"
    page = client.get(target).text
    version = page.split('id="version-1"', 1)[1].split("</article>", 1)[0]
    with app.state.sessionmaker() as session:
        reward = training_reward_at(session, world.running.id, 10)
    assert reward is not None
    assert f"<dt>Training reward at step</dt><dd>{num(reward, 4)}</dd>" in version
    assert f'<a href="/jobs/{world.running.id}">#{world.running.id} sd3-brightness-native</a>' in version
    assert "<dt>Export formats</dt><dd>none</dd>" in version


def test_a_versions_exports_link_to_their_downloads(client: TestClient, app: FastAPI, world: World) -> None:
    add_checkpoints(app, world.running.id, [10])
    target = register(client, world.running.id, "sunset", 10)
    with app.state.sessionmaker() as session:
        export = Artifact(job_id=world.running.id, attempt=1, kind="export", name="comfyui", step=10, path="exports/c")
        session.add(export)
        session.commit()
        url = f"/api/v1/jobs/{world.running.id}/artifacts/{export.id}/download"
    version = client.get(target).text.split('id="version-1"', 1)[1].split("</article>", 1)[0]
    assert f'<dt>Export formats</dt><dd><a href="{url}" title="download the comfyui export">comfyui</a></dd>' in version


def test_the_alias_form_sets_then_moves_an_alias(client: TestClient, app: FastAPI, world: World) -> None:
    add_checkpoints(app, world.running.id, [10, 20])
    register(client, world.running.id, "sunset", 10)
    target = register(client, world.running.id, "sunset", 20)
    for version in ("1", "2"):
        form = {"alias": "production", "version": version, "csrf_token": csrf_of(client.get(target).text)}
        moved = client.post("/models/sunset/aliases?team=vision", data=form)
        assert (moved.status_code, moved.headers["location"]) == (303, target)
    aliases = client.get(target).text.split('id="aliases"', 1)[1].split("</table>", 1)[0]
    assert re.search(
        r'<code>production</code></td><td class="num"><a href="#version-2">2</a></td>\s*<td>ada</td>', aliases
    )


def test_the_models_list_shows_each_model_with_its_latest_version_and_aliases(
    client: TestClient, app: FastAPI, world: World
) -> None:
    add_checkpoints(app, world.running.id, [10])
    target = register(client, world.running.id, "sunset", 10)
    form = {"alias": "candidate", "version": "1", "csrf_token": csrf_of(client.get(target).text)}
    client.post("/models/sunset/aliases?team=vision", data=form)
    row = client.get("/models").text.split("<tbody>", 1)[1].split("</tr>", 1)[0]
    assert '<a href="/models/sunset?team=vision">sunset</a>' in row
    assert '<td class="num">1</td>' in row and "candidate → 1" in row


def test_a_bad_model_name_is_refused_on_the_page_naming_the_field(
    client: TestClient, app: FastAPI, world: World
) -> None:
    add_checkpoints(app, world.running.id, [10])
    page = client.get(f"/jobs/{world.running.id}").text
    response = client.post(
        f"/jobs/{world.running.id}/register-model", data={"name": "no way", "step": "10", "csrf_token": csrf_of(page)}
    )
    assert response.status_code == 422
    assert "name: String should match pattern" in response.text
    assert client.get("/models").text.count("No models yet") == 1
