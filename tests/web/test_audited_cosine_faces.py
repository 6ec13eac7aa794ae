"""The audited cosine beside a class-A executor's speedup (services.audited_cosine) reads the same on every face:
the compare API, `sfumato compare` (--json and the table), the compare page, the job's API answer, `sfumato show`
and the job page. Its sources: the job's first-step audit, else its advice's probe; else "not audited"; a failed
audit never shows a cosine; an exact executor shows none."""

from __future__ import annotations

import copy
import json
import re
from html import unescape
from typing import Any

import httpx
from fastapi import FastAPI
from page_fixtures import PASSWORD, World, csrf_of, make_job, served
from typer.testing import CliRunner

from server.models import Advice
from server.services import metric_blocks
from server.services.current_points import record_first_step
from sfumato.cli import app as cli
from trainer.spec.ingest import MetricStep

AUDITED = {"audit/cosine": 0.9912345, "audit/rel_l2": 0.1309, "audit/failed": 0.0}
FAILED = {"audit/rel_l2": 0.2, "audit/failed": 1.0}  # the cosine was NaN: the trainer left it out
EXPECTED = {
    "audited": "cosine 0.9912 (first-step audit)",
    "failed": "audit failed (first-step audit)",
    "probed": "cosine 0.9731 (advisor's probe, advice #{advice}, reduced K and batch)",
    "unaudited": "not audited",
    "exact": None,
}


def _jobs(app: FastAPI, world: World) -> dict[str, int]:
    """Four jagg jobs, one per source, and a lean_retain job (exact), in the world's first finished job's team."""
    assert world.advice is not None
    with app.state.sessionmaker() as session:
        advice = session.get(Advice, world.advice.id)
        assert advice is not None and advice.probe is not None
        probe: dict[str, Any] = copy.deepcopy(advice.probe)
        jagg = next(row for row in probe["executors"] if row["name"] == "jagg")
        jagg |= {"gradient_cosine": 0.97312, "gradient_rel_l2": 0.23}
        advice.probe = probe
        ids = {}
        for name, executor in [
            ("audited", "jagg"), ("failed", "jagg"), ("probed", "jagg"), ("unaudited", "jagg"), ("exact", "lean_retain")
        ]:  # fmt: skip
            job = make_job(session, world.admin, None, f"cosine-{name}", executor, status="succeeded", step=2)
            job.team_id = world.finished[0].team_id
            if name == "probed":
                job.advice_id = advice.id
            values = {"audited": AUDITED, "failed": FAILED}.get(name, {})
            steps = [MetricStep(step=1, wall_time=1_732_870_000.0, values={**values, "reward/mean": 0.5})]
            record_first_step(session, job.id, 1, 1)
            metric_blocks.store(session, job.id, 1, metric_blocks.BatchPoints.of_steps(steps)[0])
            ids[name] = job.id
        session.commit()
    return ids


def _logged_in(http: httpx.Client) -> None:
    token = csrf_of(http.get("/login").text)
    response = http.post("/login", data={"username": "ada", "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 303, response.text


def _speedup_note(page: str, job_id: int) -> str | None:
    row = page.split(f'<tr data-job="{job_id}">', 1)[1].split("</tr>", 1)[0]
    found = re.search(r'<small class="muted audited-cosine"[^>]*>(.*?)</small>', row, re.S)
    return unescape(found.group(1)).strip() if found else None


def _header_note(page: str) -> str | None:
    found = re.search(r'<dd class="wraps audited-cosine"[^>]*>(.*?)</dd>', page, re.S)
    return unescape(found.group(1)).strip() if found else None


def test_every_face_shows_the_same_audited_cosine_beside_the_speedup(app: FastAPI, world: World) -> None:
    ids = _jobs(app, world)
    assert world.advice is not None
    expected = {k: v.format(advice=world.advice.id) if v else v for k, v in EXPECTED.items()}
    runner = CliRunner()
    auth = {"Authorization": f"Bearer {world.token}"}
    with served(app) as url, httpx.Client(base_url=url) as http:
        listed = list(ids.values())
        api = http.get("/api/v1/compare", params={"jobs": ",".join(map(str, listed))}, headers=auth).json()
        details = {name: http.get(f"/api/v1/jobs/{i}", headers=auth).json() for name, i in ids.items()}
        connection = ["--url", url, "--token", world.token]
        as_json = runner.invoke(cli, [*connection, "compare", *map(str, listed), "--json"])
        as_text = runner.invoke(cli, [*connection, "compare", *map(str, listed)], env={"COLUMNS": "300"})
        shown = {
            name: runner.invoke(cli, [*connection, "show", str(i)], env={"COLUMNS": "200"}) for name, i in ids.items()
        }
        _logged_in(http)
        page = http.get("/compare", params=[("job", i) for i in listed]).text
        job_pages = {name: http.get(f"/jobs/{i}").text for name, i in ids.items()}
    assert as_json.exit_code == 0 and as_text.exit_code == 0, as_json.output + as_text.output
    assert json.loads(as_json.stdout) == api
    by_id = {row["id"]: row for row in api["jobs"]}
    for name, job_id in ids.items():
        figure = by_id[job_id]["audited_cosine"]
        assert (figure["text"] if figure else None) == expected[name], name
        assert details[name]["audited_cosine"] == figure, name
        assert _speedup_note(page, job_id) == expected[name], name
        assert _header_note(job_pages[name]) == expected[name], name
        row = next(line for line in as_text.stdout.splitlines() if line.strip("│┃ ").startswith(str(job_id)))
        assert shown[name].exit_code == 0, shown[name].output
        if expected[name]:
            assert expected[name] in " ".join(as_text.stdout.split()) and expected[name] in shown[name].stdout
        else:
            assert "—" in row and "audited cosine" not in shown[name].stdout
    audited = by_id[ids["audited"]]["audited_cosine"]
    assert (audited["cosine"], audited["rel_l2"], audited["failed"]) == (0.9912345, 0.1309, False)
    failed = by_id[ids["failed"]]["audited_cosine"]
    assert (failed["cosine"], failed["failed"]) == (None, True)
