"""The job page and the jobs list show the job's peak memory, the server's one figure (7 GiB for the running job
of the page tests' world, which reports (6 + 1) GiB at every step)."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from page_fixtures import World


def text_of(html: str) -> str:
    return " ".join(re.sub(r"<[^>]+>", " ", html).split())


def test_the_job_page_shows_peak_memory_beside_duration(client: TestClient, world: World) -> None:
    header = text_of(client.get(f"/jobs/{world.running.id}/header").text)
    assert "Duration" in header and "Peak memory 7.0 GiB" in header


def test_the_jobs_list_shows_each_job_s_peak_memory(client: TestClient, world: World) -> None:
    rows = client.get("/jobs/rows").text
    row = rows[rows.index(f'id="job-{world.running.id}"') :].split("</tr>")[0]
    assert 'title="peak memory">7.0 GiB<' in row
    assert "Samples/s · peak memory" in client.get("/jobs").text
