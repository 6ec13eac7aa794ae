"""The pages' face of artifacts held by the platform: a download link per artifact on the job page (the API's own
route, read with the page session), and the team page's bytes held per kind and checkpoint retention."""

from __future__ import annotations

import hashlib

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of

from server.models import Artifact

WEIGHTS = b"model weights" * 100


def add_artifacts(app: FastAPI, job_id: int) -> tuple[int, int]:
    """An uploaded model (its bytes in the folder store) and a checkpoint whose bytes never arrived."""
    sha256 = hashlib.sha256(WEIGHTS).hexdigest()
    key = f"jobs/{job_id}/artifacts/model/{sha256}"
    stored = app.state.settings.resolved_artifact_root() / "store" / key
    stored.parent.mkdir(parents=True)
    stored.write_bytes(WEIGHTS)
    with app.state.sessionmaker() as session:
        model = Artifact(job_id=job_id, attempt=1, kind="model", name="model", step=30, path="model.safetensors",
                         size_bytes=len(WEIGHTS), sha256=sha256, packing="file", store_key=key)  # fmt: skip
        checkpoint = Artifact(job_id=job_id, attempt=1, kind="checkpoint", name="step-10", step=10,
                              path="checkpoints/step-10")  # fmt: skip
        session.add_all([model, checkpoint])
        session.commit()
        return model.id, checkpoint.id


def test_the_job_page_links_each_uploaded_artifact_to_its_download(
    app: FastAPI, client: TestClient, world: World
) -> None:
    job_id = world.running.id
    model_id, _ = add_artifacts(app, job_id)
    section = client.get(f"/jobs/{job_id}").text.split('id="artifacts"', 1)[1].split("</section>", 1)[0]
    link = f"/api/v1/jobs/{job_id}/artifacts/{model_id}/download"
    assert f'href="{link}"' in section and "not uploaded" in section
    assert client.get(link).content == WEIGHTS  # the page session reads it


def test_the_team_page_shows_the_bytes_held_and_an_admin_sets_the_retention(
    app: FastAPI, client: TestClient, world: World
) -> None:
    add_artifacts(app, world.running.id)
    team_id = world.running.team_id
    page = client.get(f"/teams/{team_id}").text
    section = page.split('id="artifacts"', 1)[1].split("</section>", 1)[0]
    assert '<td>model</td><td class="num">1.3 KiB</td>' in section and 'name="checkpoint_retention"' in section
    refused = client.post(f"/teams/{team_id}/artifact-retention", data={"checkpoint_retention": "0",
                                                                        "csrf_token": csrf_of(page)})  # fmt: skip
    assert refused.status_code == 422 and "checkpoint_retention" in refused.text
    saved = client.post(f"/teams/{team_id}/artifact-retention", data={"checkpoint_retention": "3",
                                                                      "csrf_token": csrf_of(page)})  # fmt: skip
    assert saved.status_code == 303
    assert (
        'name="checkpoint_retention" type="number" min="1" max="10000" value="3"'
        in client.get(f"/teams/{team_id}").text
    )
