"""The experiment report (its HTML page and its Markdown folder) gives each cell group's time to reward R with
its interval over seeds: the summary's own figure, rendered, never computed again."""

from __future__ import annotations

import io
import re
import zipfile
from datetime import UTC, datetime, timedelta
from html import unescape
from typing import Any

import pytest
from experiment_cells import create
from server_harness import Harness
from sqlalchemy import select

from server.models import Allocation, JobAttempt, utcnow

START = datetime.now(UTC).replace(microsecond=0, tzinfo=None) - timedelta(days=1)
# Per executor: the reward of each step and the seconds a step took in each seed. Both native seeds end at 0.6,
# so R (the final reward of the set's native Flow-GRPO job) is 0.6 whichever native job is the reference.
REWARDS = {"native": [0.4, 0.5, 0.6], "jagg": [0.5, 0.6, 0.7]}
STEP_SECONDS = {("native", 1): 10.0, ("native", 2): 12.0, ("jagg", 1): 8.0, ("jagg", 2): 9.0}


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: the rendering of a summary; the database engine plays no part."""
    return migrated_sqlite_url


def run_timed_cell(harness: Harness, job_id: int, host: int, rewards: list[float], step_s: float) -> None:
    """A cell whose trainer ran from START, one reward point at the end of each step of `step_s` seconds."""
    token = harness.start_job(job_id, host_id=host)
    begin = START.replace(tzinfo=UTC).timestamp()
    steps = [
        {"step": i + 1, "wall_time": begin + step_s * (i + 1), "values": {"reward/mean": reward}}
        for i, reward in enumerate(rewards)
    ]
    sent = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json={"attempt": 1, "steps": steps}, headers=token)
    assert sent.status_code == 200, sent.text
    harness.finish_job(job_id)
    end = START + timedelta(seconds=step_s * len(rewards))
    with harness.session() as session:
        attempt = session.scalars(select(JobAttempt).where(JobAttempt.job_id == job_id)).one()
        attempt.started_at, attempt.last_seen_at, attempt.ended_at = START, end, end
        for allocation in session.scalars(select(Allocation).where(Allocation.job_id == job_id)):
            allocation.released_at = utcnow()
        session.commit()


@pytest.fixture
def experiment(harness: Harness) -> dict[str, Any]:
    """native and jagg over seeds 1 and 2, run, with the summary the API gives for it."""
    host = harness.add_host("gpu-1", device_type="cpu", count=2)
    body = create(harness, ("executor.name", ["native", "jagg"]), ("seed", [1, 2]))
    for cell in body["cells"]:
        executor, seed = cell["values"]["executor.name"], cell["values"]["seed"]
        run_timed_cell(harness, cell["job_id"], host, REWARDS[executor], STEP_SECONDS[(executor, seed)])
    detail = harness.client.get(f"/api/v1/experiments/{body['id']}", headers=harness.admin)
    assert detail.status_code == 200, detail.text
    return dict(detail.json())


def interval_text(interval: dict[str, Any]) -> str:
    return f"{interval['mean']:.4g} [{interval['low']:.4g}, {interval['high']:.4g}]"


def markdown_groups(harness: Harness, experiment_id: int) -> list[dict[str, str]]:
    """The Markdown report's cell-group table as one {header: cell} per row, Markdown's escapes undone."""
    zipped = harness.client.get(f"/api/v1/experiments/{experiment_id}/report?format=md", headers=harness.admin)
    text = zipfile.ZipFile(io.BytesIO(zipped.content)).read(f"experiment-{experiment_id}/report.md").decode()
    section = text.split("## Cell groups", 1)[1].split("\n\n", 2)[1]
    header, _, *rows = [
        [c.strip().replace("\\", "") for c in line.strip("|").split(" | ")] for line in section.split("\n")
    ]
    return [dict(zip(header, row, strict=True)) for row in rows]


def html_groups(harness: Harness, experiment_id: int) -> list[dict[str, str]]:
    """The HTML report's cell-group table as one {header: cell} per row."""
    page = harness.client.get(f"/api/v1/experiments/{experiment_id}/report?format=html", headers=harness.admin).text
    table = page.split("<h2>Cell groups", 1)[1].split("</table>", 1)[0]
    rows = [
        [unescape(cell) for cell in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row)]
        for row in re.findall(r"<tr>(.*?)</tr>", table)
    ]
    return [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


@pytest.mark.parametrize("read_groups", [markdown_groups, html_groups], ids=["markdown", "html"])
def test_each_group_shows_the_summary_s_time_to_reward_with_its_interval_over_seeds(
    harness: Harness, experiment: dict[str, Any], read_groups: Any
) -> None:
    summary = experiment["summary"]
    assert summary["reward_target"] == 0.6
    shown = {row["group"]: row for row in read_groups(harness, experiment["id"])}
    for group in summary["groups"]:
        row = shown[group["label"]]
        assert row["time to R = 0.6 (s)"] == interval_text(group["time_to_reward_s"])
        assert row["reached R"] == group["reached_reward"] == "2 of 2 seeds reached R"
    native = shown["native"]["time to R = 0.6 (s)"]
    assert native.startswith("32.86 [")  # seeds at 30 s and 36 s: their geometric mean, with its interval
