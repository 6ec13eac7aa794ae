"""A queued job's progress reads "queued · 0 of N steps": N is known from its spec when it is submitted."""

from __future__ import annotations

import json
import re
from pathlib import Path

from fastapi.testclient import TestClient
from page_fixtures import World

SPEC = json.loads((Path(__file__).resolve().parents[2] / "examples" / "tiny-native.json").read_text())


def submit(client: TestClient, world: World, total_steps: int) -> dict[str, object]:
    spec = SPEC | {"name": "queued-progress", "algorithm": SPEC["algorithm"] | {"total_steps": total_steps},
                   "resources": {"devices": 1, "device_type": "cuda"}}  # the world's host has GPUs
    response = client.post("/api/v1/jobs", json=spec, headers={"Authorization": f"Bearer {world.token}"})
    assert response.status_code == 201, response.text
    return response.json()


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_a_submitted_job_knows_its_total_steps_before_it_runs(client: TestClient, world: World) -> None:
    job = submit(client, world, total_steps=12)
    assert (job["status"], job["step"], job["total_steps"]) == ("queued", 0, 12)


def test_the_jobs_list_shows_a_queued_job_as_queued_0_of_n_steps(client: TestClient, world: World) -> None:
    job = submit(client, world, total_steps=12)
    rows = client.get("/jobs/rows").text
    row = rows[rows.index(f'id="job-{job["id"]}"') :].split("</tr>")[0]
    assert "queued · 0 of 12 steps" in text_of(row)


def test_the_job_page_shows_a_queued_job_as_queued_0_of_n_steps(client: TestClient, world: World) -> None:
    job = submit(client, world, total_steps=12)
    assert "Progress queued · 0 of 12 steps" in text_of(client.get(f"/jobs/{job['id']}").text)
