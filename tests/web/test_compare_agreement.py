"""The three faces of the compare answer agree: the API, `sfumato compare` (--json and the table) and the page
show the same samples/s, speedup and duration for every job of one fixture."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from html import unescape
from typing import Any

import httpx
from fastapi import FastAPI
from page_fixtures import PASSWORD, World, add_history, csrf_of, make_job, served
from typer.testing import CliRunner

from server.models import utcnow
from server.services import metric_blocks
from server.services.current_points import record_first_step
from sfumato.cli import app as cli
from trainer.spec.ingest import MetricStep

# The first step is the warm-up; the median of the rest is 1.3 (the world's lean jobs run at 1.6x and 1.4x that).
NATIVE_THROUGHPUT = [5.0, 1.0, 1.3, 1.2, 1.4, 9.0]
NATIVE_SECONDS = 95


def _finished_native(app: FastAPI, world: World) -> int:
    """A native run of the world's spec that took 95 s, with a slow warm-up step and one slow outlier."""
    with app.state.sessionmaker() as session:
        end = utcnow()
        job = make_job(
            session, world.admin, None, "sd3-brightness-native-done", "native", status="succeeded", attempt=1,
            step=len(NATIVE_THROUGHPUT), started_at=end - timedelta(seconds=NATIVE_SECONDS), finished_at=end,
        )  # fmt: skip
        job.team_id = world.finished[0].team_id
        steps = [
            MetricStep(step=step, wall_time=1_732_870_000.0 + step, values={"throughput/samples_per_s": value})
            for step, value in enumerate(NATIVE_THROUGHPUT)
        ]
        record_first_step(session, job.id, 1, 0)
        metric_blocks.store(session, job.id, 1, metric_blocks.BatchPoints.of_steps(steps)[0])
        add_history(session, job)
        session.commit()
        return job.id


def _page_cells(html: str, job_id: int) -> dict[str, str]:
    row = html.split(f'<tr data-job="{job_id}">', 1)[1].split("</tr>", 1)[0]
    cells = re.findall(r'<td class="num ([a-z-]+)">(.*?)</td>', row, re.S)
    return {name: unescape(re.sub(r"<[^>]+>", "", text)).strip() for name, text in cells}


def _cli_rows(output: str) -> dict[int, list[str]]:
    rows = {}
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if cells and cells[0].isdigit():
            rows[int(cells[0])] = cells
    return rows


def _logged_in(http: httpx.Client) -> None:
    token = csrf_of(http.get("/login").text)
    response = http.post("/login", data={"username": "ada", "password": PASSWORD, "csrf_token": token})
    assert response.status_code == 303, response.text


def test_the_api_the_cli_and_the_page_show_the_same_figures(app: FastAPI, world: World) -> None:
    ids = [_finished_native(app, world), *(job.id for job in world.finished)]
    runner = CliRunner()
    with served(app) as url, httpx.Client(base_url=url) as http:
        listed = ",".join(map(str, ids))
        api: dict[str, Any] = http.get(
            "/api/v1/compare", params={"jobs": listed}, headers={"Authorization": f"Bearer {world.token}"}
        ).json()
        connection = ["--url", url, "--token", world.token, "compare", *map(str, ids)]
        as_json = runner.invoke(cli, [*connection, "--json"])
        as_text = runner.invoke(cli, connection, env={"COLUMNS": "250"})
        _logged_in(http)
        page = http.get("/compare", params=[("job", i) for i in ids]).text
    assert as_json.exit_code == 0 and as_text.exit_code == 0, as_json.output + as_text.output
    assert json.loads(as_json.stdout) == api
    native, retain, reweight = api["jobs"]
    assert (native["samples_per_s"], native["speedup"], native["duration_s"]) == (1.3, 1.0, NATIVE_SECONDS)
    assert (round(retain["speedup"], 6), round(reweight["speedup"], 6)) == (1.6, 1.4)
    table = _cli_rows(as_text.stdout)
    for row in api["jobs"]:
        shown = (f"{row['samples_per_s']:.3g}", f"{row['speedup']:.2f}\u00d7")
        cells = _page_cells(page, row["id"])
        assert (cells["samples-per-s"], cells["speedup"]) == shown
        assert shown[0] in table[row["id"]] and shown[1] in table[row["id"]]
        assert cells["duration"] in table[row["id"]]
    assert _page_cells(page, native["id"])["duration"] == "1 min 35 s"


def test_every_face_says_which_job_the_speedups_are_over_whatever_the_order_of_the_ids(
    app: FastAPI, world: World
) -> None:
    native = _finished_native(app, world)
    ids = [native, *(job.id for job in world.finished)]
    runner = CliRunner()
    with served(app) as url, httpx.Client(base_url=url) as http:
        answers = [
            http.get(
                "/api/v1/compare",
                params={"jobs": ",".join(map(str, order))},
                headers={"Authorization": f"Bearer {world.token}"},
            ).json()
            for order in (ids, ids[::-1])
        ]
        connection = ["--url", url, "--token", world.token, "compare", *map(str, ids[::-1])]
        cli_text = runner.invoke(cli, connection)
        named = runner.invoke(cli, [*connection, "--reference", str(ids[1]), "--json"])
        _logged_in(http)
        page = unescape(http.get("/compare", params=[("job", i) for i in ids[::-1]]).text)
    assert [a["reference"] for a in answers] == [f"speedup over #{native}"] * 2
    assert [sorted((r["id"], r["speedup"]) for r in a["jobs"]) for a in answers[1:]] == [
        sorted((r["id"], r["speedup"]) for r in answers[0]["jobs"])
    ]
    assert cli_text.exit_code == 0, cli_text.output
    assert f"speedup over #{native} (" in cli_text.output
    assert f"Speedup over #{native}" in page
    assert named.exit_code == 0, named.output
    assert json.loads(named.stdout)["reference"] == f"speedup over #{ids[1]}"
