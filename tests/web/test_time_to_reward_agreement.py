"""Time to reward R: one server figure that the API, `sfumato compare` (--json and the table) and the compare page
show alike; R defaults to the final reward of the set's native Flow-GRPO job; a reward_target that is not a
number is refused naming it."""

from __future__ import annotations

import json
import re
from datetime import UTC, timedelta
from html import unescape
from typing import Any

import httpx
from fastapi import FastAPI
from page_fixtures import PASSWORD, World, csrf_of, make_job, served
from typer.testing import CliRunner

from server.models import utcnow
from server.services import metric_blocks
from server.services.current_points import record_first_step
from sfumato.cli import app as cli
from trainer.spec.ingest import MetricStep

START = 1_732_870_000.0


def _method(app: FastAPI, world: World, name: str, algorithm: str, rewards: list[float], step_s: float) -> int:
    """A finished job whose attempt ran from START for as long as its steps took, one reward point per step."""
    with app.state.sessionmaker() as session:
        started = utcnow().replace(microsecond=0, tzinfo=None) - timedelta(days=1)
        begin = started.replace(tzinfo=UTC).timestamp()
        end = started + timedelta(seconds=step_s * len(rewards))
        job = make_job(
            session, world.admin, None, name, "native", status="succeeded", attempt=1, algorithm=algorithm,
            step=len(rewards), started_at=started, finished_at=end,
        )  # fmt: skip
        job.team_id = world.finished[0].team_id
        steps = [
            MetricStep(step=i + 1, wall_time=begin + step_s * (i + 1), values={"reward/mean": value})
            for i, value in enumerate(rewards)
        ]
        record_first_step(session, job.id, 1, 1)
        metric_blocks.store(session, job.id, 1, metric_blocks.BatchPoints.of_steps(steps)[0])
        session.commit()
        return job.id


def _page_time(html: str, job_id: int) -> str:
    row = html.split(f'<tr data-job="{job_id}">', 1)[1].split("</tr>", 1)[0]
    cell = re.search(r'<td class="num time-to-reward">(.*?)</td>', row, re.S)
    assert cell is not None
    return unescape(re.sub(r"<[^>]+>", "", cell.group(1))).split("@")[0].strip()


def _cli_time(output: str, job_id: int) -> str:
    for line in output.splitlines():
        cells = [c.strip() for c in line.strip("│┃ ").split("│")]
        if cells and cells[0] == str(job_id):
            return cells[-1]
    raise AssertionError(f"no row for job {job_id} in {output}")


def _faces(app: FastAPI, world: World, ids: list[int], target: str | None) -> tuple[Any, Any, str, str, int]:
    runner = CliRunner()
    extra = ["--reward", target] if target is not None else []
    params: dict[str, str] = {"jobs": ",".join(map(str, ids))} | ({"reward_target": target} if target else {})
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        api = http.get("/api/v1/compare", params=params, headers={"Authorization": f"Bearer {world.token}"})
        connection = ["--url", url, "--token", world.token, "compare", *map(str, ids), *extra]
        as_json = runner.invoke(cli, [*connection, "--json"])
        as_text = runner.invoke(cli, connection, env={"COLUMNS": "260"})
        token = csrf_of(http.get("/login").text)
        http.post("/login", data={"username": "ada", "password": PASSWORD, "csrf_token": token})
        page = http.get("/compare", params=[("job", i) for i in ids] + ([("reward_target", target)] if target else []))
    assert as_json.exit_code == 0 and as_text.exit_code == 0, as_json.output + as_text.output
    return api.json(), json.loads(as_json.stdout), as_text.stdout + as_text.stderr, page.text, page.status_code


def test_the_api_the_cli_and_the_page_show_the_same_time_to_reward(app: FastAPI, world: World) -> None:
    native = _method(app, world, "shapes/flow_grpo", "flow_grpo", [0.40, 0.45, 0.50, 0.55, 0.60], step_s=10.0)
    quick = _method(app, world, "shapes/dance_grpo", "dance_grpo", [0.42, 0.58, 0.61, 0.62], step_s=4.0)
    api, from_cli, text, page, _ = _faces(app, world, [native, quick], None)
    assert from_cli == api
    rows = {row["id"]: row for row in api["jobs"]}
    assert (rows[native]["time_to_reward_s"], rows[native]["time_to_reward_step"]) == (50.0, 5)
    assert (rows[quick]["time_to_reward_s"], rows[quick]["time_to_reward_step"]) == (12.0, 3)
    for job_id in (native, quick):
        assert _page_time(page, job_id) == _cli_time(text, job_id) == f"{rows[job_id]['time_to_reward_s']:.1f} s"


def test_r_defaults_to_the_final_reward_of_the_native_flow_grpo_job_and_a_named_r_replaces_it(
    app: FastAPI, world: World
) -> None:
    native = _method(app, world, "shapes/flow_grpo", "flow_grpo", [0.40, 0.52, 0.47], step_s=10.0)
    other = _method(app, world, "shapes/dance_grpo", "dance_grpo", [0.30, 0.35, 0.44], step_s=4.0)
    default, _, _, page, _ = _faces(app, world, [other, native], None)
    assert (default["reward_target"], default["reward_target_job_id"]) == (0.47, native)
    assert f"the final train reward of #{native}, the native Flow-GRPO job of the set" in unescape(page)
    named, _, text, _, _ = _faces(app, world, [other, native], "0.5")
    assert (named["reward_target"], named["reward_target_job_id"]) == (0.5, None)
    assert [row["time_to_reward_s"] for row in named["jobs"]] == [None, 20.0]
    assert _cli_time(text, other) == "not reached"


def test_without_a_native_flow_grpo_job_there_is_no_default_r(app: FastAPI, world: World) -> None:
    first = _method(app, world, "shapes/dance_grpo", "dance_grpo", [0.30, 0.35], step_s=4.0)
    second = _method(app, world, "shapes/flash_grpo", "flash_grpo", [0.31, 0.36], step_s=4.0)
    api, _, text, page, _ = _faces(app, world, [first, second], None)
    assert api["reward_target"] is None
    assert [row["time_to_reward_s"] for row in api["jobs"]] == [None, None]
    assert "the set has no native Flow-GRPO job with a reward; choose one" in text
    assert _page_time(page, first) == "—"


def test_a_reward_target_that_is_not_a_number_is_refused_naming_it(app: FastAPI, world: World) -> None:
    job = _method(app, world, "shapes/flow_grpo", "flow_grpo", [0.40, 0.45], step_s=10.0)
    with served(app) as url, httpx.Client(base_url=url, timeout=60) as http:
        for bad in ("high", "nan"):
            response = http.get(
                "/api/v1/compare",
                params={"jobs": str(job), "reward_target": bad},
                headers={"Authorization": f"Bearer {world.token}"},
            )
            assert response.status_code == 422, response.text
            assert [e["field"] for e in response.json()["detail"]] == ["reward_target"]
