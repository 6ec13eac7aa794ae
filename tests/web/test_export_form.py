"""The job page's Exports section: a form with the formats the job's family has and its checkpoints, which queues
an export job and comes back to the section, where the export is listed; a refusal is a page naming the field."""

from __future__ import annotations

import re

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, csrf_of
from test_model_pages import add_checkpoints


def export_form(page: str) -> str:
    return page.split('class="inline export-form"', 1)[1].split("</form>", 1)[0]


def test_the_export_form_offers_the_family_s_formats_and_the_job_s_checkpoints(
    client: TestClient, app: FastAPI, world: World
) -> None:
    add_checkpoints(app, world.running.id, [10, 20])
    form = export_form(client.get(f"/jobs/{world.running.id}").text)
    assert re.findall(r'<option value="([a-z]+)">', form) == ["diffusers", "comfyui", "merged"]
    assert re.findall(r'<option value="(\d+)">', form) == ["20", "10"]


def test_exporting_from_the_page_queues_an_export_job_listed_on_the_job_page(
    client: TestClient, app: FastAPI, world: World
) -> None:
    add_checkpoints(app, world.running.id, [10])
    page = client.get(f"/jobs/{world.running.id}").text
    data = {"format": "comfyui", "step": "10", "csrf_token": csrf_of(page)}
    response = client.post(f"/jobs/{world.running.id}/exports", data=data)
    assert (response.status_code, response.headers["location"]) == (303, f"/jobs/{world.running.id}#exports")
    section = client.get(f"/jobs/{world.running.id}").text.split('id="exports"', 1)[1].split("</section>", 1)[0]
    assert re.search(r"<td>comfyui</td><td class=\"num\">10</td>\s*<td><span class=\"status status-queued\">", section)


def test_a_step_without_a_checkpoint_is_a_page_naming_the_step(client: TestClient, app: FastAPI, world: World) -> None:
    add_checkpoints(app, world.running.id, [10])
    page = client.get(f"/jobs/{world.running.id}").text
    data = {"format": "diffusers", "step": "11", "csrf_token": csrf_of(page)}
    response = client.post(f"/jobs/{world.running.id}/exports", data=data)
    assert response.status_code == 422
    assert "step: job" in response.text and "no checkpoint at step 11; its steps: 10" in response.text
