"""The reward server's caller check: node 0 of a job shows its reward token, every other node its node token;
each counts only while that attempt runs and only for its job's team's services, a forged node token never, the
job token never, and neither opens anything but the caller check. A user scores with a write token of an admin
or member of the service's team; read tokens and viewers do not. A yes says how long it may be trusted. On
SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import pytest
from server_harness import Harness, Headers, bearer
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Job, Team, utcnow
from server.services import job_runs
from server.services.node_tokens import node_token, node_token_key
from server.services.placement_pass import NodeTask
from server.services.retry_policy import retry_or_fail
from server.services.scheduler import schedule_once

BRIGHT = {"reward": "brightness", "devices": 1, "device_type": "cpu"}


@dataclass(frozen=True)
class RunningAttempt:
    """A two-node job attempt the worker started: what node 0's and node 1's trainers were given."""

    job_id: int
    attempt: int
    job_token: str
    reward_token: str  # node 0's
    node_token: str  # node 1's reward token
    tasks: list[NodeTask]


StartJob = Callable[[], RunningAttempt]


@pytest.fixture
def start_lab_job(
    harness: Harness, lab: Headers, factory: sessionmaker[Session], add_host, add_job, tmp_path: Path
) -> StartJob:
    """Places a two-node job of team lab and starts both nodes as the workers do (start_run, mark_running),
    signing node tokens with the key the server derives from its SFUMATO_SECRET_KEY."""
    add_host("alpha", devices=3)  # room for two attempts and a service
    add_host("beta", devices=3)
    with harness.session() as session:
        team_id = session.scalar(select(Team.id).where(Team.name == "lab"))

    def start() -> RunningAttempt:
        add_job(nodes=2, team_id=team_id)
        return start_placed(harness, factory, tmp_path)

    return start


def start_placed(harness: Harness, factory: sessionmaker[Session], root: Path) -> RunningAttempt:
    sent: list[object] = []
    schedule_once(factory, sent.append, 30.0)
    tasks = sorted((t for t in sent if isinstance(t, NodeTask)), key=lambda t: t.node_rank)  # not a service's
    key = node_token_key(harness.settings.secret_key)
    with factory.begin() as session:
        plans = [
            job_runs.start_run(session, t.job_id, t.attempt, t.node_rank, t.host, root, node_token_key=key)
            for t in tasks
        ]
        for t in tasks:
            job_runs.mark_running(session, t.job_id, t.attempt, t.node_rank, t.host)
    first, second = plans
    assert first is not None and first.token and first.reward_token and second is not None and second.reward_token
    return RunningAttempt(first.job_id, first.attempt, first.token, first.reward_token, second.reward_token, tasks)


def service_of(harness: Harness, headers: Headers, name: str) -> str:
    response = harness.client.post("/api/v1/services", json=BRIGHT | {"name": name}, headers=headers)
    assert response.status_code == 201, response.text
    return f"/api/v1/services/{response.json()['id']}/caller"


def verdict(harness: Harness, check: str, token: str) -> int:
    return harness.client.get(check, headers=bearer(token)).status_code


def test_both_nodes_of_a_running_job_may_use_their_teams_service(
    harness: Harness, lab: Headers, start_lab_job: StartJob
) -> None:
    running = start_lab_job()
    check = service_of(harness, lab, "bright")

    assert (verdict(harness, check, running.reward_token), verdict(harness, check, running.node_token)) == (200, 200)


def test_the_job_token_does_not_score(harness: Harness, lab: Headers, start_lab_job: StartJob) -> None:
    running = start_lab_job()
    check = service_of(harness, lab, "bright")

    assert verdict(harness, check, running.job_token) == 403


def test_another_teams_service_is_answered_to_a_node_token_as_a_missing_one(
    harness: Harness, studio: Headers, start_lab_job: StartJob
) -> None:
    running = start_lab_job()
    check = service_of(harness, studio, "studio-bright")
    missing = "/api/v1/services/999999/caller"

    assert (verdict(harness, check, running.node_token), verdict(harness, missing, running.node_token)) == (404, 404)


def test_the_jobs_tokens_are_refused_once_it_has_finished(
    harness: Harness, lab: Headers, factory: sessionmaker[Session], start_lab_job: StartJob
) -> None:
    running = start_lab_job()
    check = service_of(harness, lab, "bright")
    with factory.begin() as session:
        for t in running.tasks:
            job_runs.finish_run(session, t.job_id, t.attempt, t.node_rank, t.host, 0, None, [])
    with factory() as session:
        assert session.get_one(Job, running.job_id).status == "succeeded"

    assert (verdict(harness, check, running.reward_token), verdict(harness, check, running.node_token)) == (403, 403)


def test_a_node_token_of_an_earlier_attempt_is_refused_and_the_new_attempts_is_accepted(
    harness: Harness, lab: Headers, factory: sessionmaker[Session], start_lab_job: StartJob, tmp_path: Path
) -> None:
    first = start_lab_job()
    check = service_of(harness, lab, "bright")
    with factory.begin() as session:
        assert retry_or_fail(session, session.get_one(Job, first.job_id), "host beta was lost")
    second = start_placed(harness, factory, tmp_path)

    assert second.attempt == first.attempt + 1
    assert (verdict(harness, check, first.node_token), verdict(harness, check, second.node_token)) == (403, 200)


def test_a_forged_node_token_is_refused(harness: Harness, lab: Headers, start_lab_job: StartJob) -> None:
    running, other = start_lab_job(), start_lab_job()
    check = service_of(harness, lab, "bright")
    prefix, mac = running.node_token.rsplit("_", 1)
    altered_mac = f"{prefix}_{mac[:-1]}{'0' if mac[-1] != '0' else '1'}"
    other_job = running.node_token.replace(f"sfn_{running.job_id}_", f"sfn_{other.job_id}_", 1)
    another_key = node_token(node_token_key("not the server's key"), running.job_id, running.attempt, 1)

    forged = [altered_mac, other_job, another_key, "sfn_1_1_1_not-a-mac"]

    assert [verdict(harness, check, token) for token in forged] == [401, 401, 401, 401]
    assert verdict(harness, check, other.node_token) == 200


@pytest.mark.parametrize("which", ["reward_token", "node_token"])
def test_a_reward_token_cannot_ingest_as_the_job_or_call_the_api(
    harness: Harness, lab: Headers, start_lab_job: StartJob, which: str
) -> None:
    running = start_lab_job()
    job = f"/api/v1/ingest/{running.job_id}"
    node = bearer(getattr(running, which))
    metrics = {"attempt": running.attempt, "steps": [{"step": 0, "wall_time": 1.0, "values": {"loss": 1.0}}]}
    progress = {"attempt": running.attempt, "step": 1, "total_steps": 10}

    refused = [
        harness.client.post(f"{job}/metrics", json=metrics, headers=node).status_code,
        harness.client.post(f"{job}/progress", json=progress, headers=node).status_code,
        harness.client.get(f"/api/v1/jobs/{running.job_id}", headers=node).status_code,
        harness.client.get("/api/v1/services", headers=node).status_code,
    ]

    assert refused == [401, 401, 401, 401]


def test_a_yes_for_a_jobs_reward_token_may_be_kept_for_the_configured_seconds(
    harness: Harness, lab: Headers, start_lab_job: StartJob
) -> None:
    running = start_lab_job()
    check = service_of(harness, lab, "bright")

    answer = harness.client.get(check, headers=bearer(running.reward_token))

    assert answer.headers["cache-control"] == f"private, max-age={harness.settings.caller_trust_seconds}"


def test_a_yes_for_a_user_token_is_kept_no_longer_than_the_token_lives(harness: Harness, lab: Headers) -> None:
    check = service_of(harness, lab, "bright")
    expiring = harness.add_user("eve", "lab", expires_at=utcnow() + timedelta(seconds=3))

    answer = harness.client.get(check, headers=expiring)

    assert answer.status_code == 200 and int(answer.headers["cache-control"].rsplit("=", 1)[1]) <= 3


def test_read_tokens_and_viewers_cannot_score_and_writing_members_can(harness: Harness, lab: Headers) -> None:
    check = service_of(harness, lab, "bright")
    callers = [
        harness.add_user("vic", "lab", "viewer"),
        harness.add_user("rita", "lab", "member", scope="read"),
        harness.add_user("ada", "lab", "admin", scope="read"),
        harness.add_user("mo", "lab", "member"),
    ]

    assert [harness.client.get(check, headers=c).status_code for c in callers] == [403, 403, 403, 200]
