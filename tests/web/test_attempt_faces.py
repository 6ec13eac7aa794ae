"""The job page, the API and `sfumato show` give a job's attempt with its retries after failure and its restarts
of the platform in the server's one sentence, never "attempt 4 / 3"."""

from __future__ import annotations

import json
import re
from datetime import timedelta

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, make_job, served
from typer.testing import CliRunner

from server.models import JobAttempt, utcnow
from sfumato.cli import app as cli

SENTENCE = "attempt 4 · 1 retry after failure (max 2) · 2 restarts of the platform (max 10)"


def restarted_twice_and_retried_once(app: FastAPI, world: World) -> int:
    """A running job at attempt 4 with retry.max_attempts 3: the platform ended attempts 1 and 3, an
    out-of-memory kill attempt 2."""
    with app.state.sessionmaker() as session:
        now = utcnow()
        job = make_job(
            session, world.admin, None, "restarted", "native", status="running", attempt=4, max_attempts=3,
            started_at=now - timedelta(minutes=9),
        )  # fmt: skip
        job.team_id = world.running.team_id
        for attempt, ended_by in ((1, "platform"), (2, "failure"), (3, "platform")):
            start = now - timedelta(minutes=10 - 2 * attempt)
            session.add(
                JobAttempt(job_id=job.id, attempt=attempt, started_at=start, last_seen_at=start + timedelta(minutes=1),
                           ended_at=start + timedelta(minutes=1), ended_by=ended_by)
            )  # fmt: skip
        session.commit()
        return job.id


def test_the_job_page_gives_the_attempt_with_both_counts(app: FastAPI, world: World, client: TestClient) -> None:
    job_id = restarted_twice_and_retried_once(app, world)

    header = " ".join(re.sub(r"<[^>]+>", " ", client.get(f"/jobs/{job_id}/header").text).split())

    assert f"Attempt {SENTENCE}" in header


def test_sfumato_show_gives_the_api_s_sentence(app: FastAPI, world: World) -> None:
    job_id = restarted_twice_and_retried_once(app, world)
    with served(app) as url:
        api = CliRunner().invoke(cli, ["--url", url, "--token", world.token, "show", str(job_id), "--json"])
        shown = CliRunner().invoke(cli, ["--url", url, "--token", world.token, "show", str(job_id)])

    assert (api.exit_code, shown.exit_code) == (0, 0), api.output + shown.output
    attempt_row = next(line for line in shown.stdout.splitlines() if line.startswith("attempt"))
    assert json.loads(api.stdout)["attempts_summary"] == attempt_row.split(None, 1)[1].strip() == SENTENCE
