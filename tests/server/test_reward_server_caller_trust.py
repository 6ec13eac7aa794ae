"""A real reward server (`sfumato reward-server --auth-url`) in front of a real platform (the app under uvicorn):
it keeps the caller check's yes only as long as the platform's answer says, so a job's reward token stops
scoring soon after the job ends and a user's token soon after it is revoked, not a minute later; and it refuses
the job token, read tokens and viewers, as the caller check does. On SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from server_harness import Harness, Headers, png_bytes
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker
from test_service_caller_node_tokens import RunningAttempt, service_of, start_placed

from server.models import ApiToken, JobStatus, Team, User, utcnow
from sfumato.cli.reward_server_process import RewardServer, reward_server

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "web"))  # page_fixtures.served: a live uvicorn
from page_fixtures import served

TRUST_S = 1  # the platform's bound in these tests, so a refusal is due within a second or so
DEADLINE_S = 15.0  # well under the minute a reward server used to keep every yes
SCORE = {"images": [base64.b64encode(png_bytes()).decode()], "prompts": ["a red square"]}


@pytest.fixture
def live(harness: Harness, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The harness's platform under uvicorn, answering caller checks with a yes that holds for TRUST_S."""
    app = harness.client.app
    monkeypatch.setattr(app.state.settings, "caller_trust_seconds", TRUST_S)  # type: ignore[attr-defined]
    with served(app) as url:  # type: ignore[arg-type]
        yield url


@pytest.fixture
def lab_service(harness: Harness, lab: Headers, live: str) -> Iterator[RewardServer]:
    """A brightness reward server that asks the live platform about its callers, as lab's service 'bright'."""
    check = service_of(harness, lab, "bright")
    with reward_server("--reward", "brightness", "--auth-url", live + check) as server:
        yield server


def score(server: RewardServer, token: str) -> int:
    return httpx.post(f"{server.url}/v1/score", json=SCORE, headers={"Authorization": f"Bearer {token}"}).status_code


def refused_within(deadline_s: float, attempt: Callable[[], int]) -> int:
    """The first refusal (401) `attempt` meets, or its last answer once the deadline has passed."""
    deadline = time.monotonic() + deadline_s
    status = attempt()
    while status != 401 and time.monotonic() < deadline:
        status = attempt()
    return status


@pytest.fixture
def running_job(
    harness: Harness, lab: Headers, factory: sessionmaker[Session], add_host, add_job, tmp_path: Path
) -> RunningAttempt:
    """A two-node job of team lab, started as the workers start it."""
    add_host("alpha", devices=2)
    add_host("beta", devices=2)
    with harness.session() as session:
        team_id = session.scalar(select(Team.id).where(Team.name == "lab"))
    add_job(nodes=2, team_id=team_id)
    return start_placed(harness, factory, tmp_path)


def test_a_jobs_reward_tokens_stop_scoring_soon_after_the_job_ends(
    harness: Harness, running_job: RunningAttempt, lab_service: RewardServer
) -> None:
    tokens = (running_job.reward_token, running_job.node_token)
    assert [score(lab_service, token) for token in tokens] == [200, 200]

    harness.finish_job(running_job.job_id, JobStatus.SUCCEEDED)

    assert [refused_within(DEADLINE_S, lambda t=token: score(lab_service, t)) for token in tokens] == [401, 401]


def test_a_users_token_stops_scoring_soon_after_it_is_revoked(
    harness: Harness, lab: Headers, lab_service: RewardServer
) -> None:
    member = harness.add_user("mo", "lab", "member")["Authorization"].removeprefix("Bearer ")
    assert score(lab_service, member) == 200

    with harness.session() as session:
        token = session.scalars(select(ApiToken).join(User).where(User.username == "mo")).one()
        token.revoked_at = utcnow()
        session.commit()

    assert refused_within(DEADLINE_S, lambda: score(lab_service, member)) == 401


def test_the_job_token_read_tokens_and_viewers_cannot_score(
    harness: Harness, running_job: RunningAttempt, lab_service: RewardServer
) -> None:
    viewer = harness.add_user("vic", "lab", "viewer")
    reader = harness.add_user("rita", "lab", "member", scope="read")
    tokens = [running_job.job_token, *(h["Authorization"].removeprefix("Bearer ") for h in (viewer, reader))]

    assert [score(lab_service, token) for token in tokens] == [401, 401, 401]
