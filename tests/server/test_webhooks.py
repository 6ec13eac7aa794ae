"""A team's webhooks: a delivery reaches a real receiver with a body it can verify by the webhook's secret, a
receiver that fails is retried with exponential backoff until it answers (each attempt in the history), and a URL
the platform may not call is refused naming `url`."""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Iterator

import pytest
from server_harness import Harness, Headers
from sqlalchemy import update
from webhook_receiver import Receiver, receiving

from server.config import Settings
from server.db import session_scope
from server.models import Team, WebhookDelivery
from server.services.webhook_delivery import MAX_ATTEMPTS, attempt_delivery, retry_delay


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The embedded platform's rule: receivers on this machine may be named."""
    return settings.model_copy(update={"allow_private_urls": True})


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    with receiving() as state:
        yield state


def team_id(harness: Harness, headers: Headers) -> int:
    return int(harness.client.get("/api/v1/teams", headers=headers).json()["items"][0]["id"])


def create(harness: Harness, headers: Headers, url: str) -> dict:
    response = harness.client.post(
        f"/api/v1/teams/{team_id(harness, headers)}/webhooks", json={"url": url}, headers=headers
    )
    assert response.status_code == 201, response.text
    return dict(response.json())


def queue_test(harness: Harness, headers: Headers, webhook: dict) -> int:
    response = harness.client.post(f"/api/v1/teams/{webhook['team_id']}/webhooks/{webhook['id']}/test", headers=headers)
    assert response.status_code == 202, response.text
    return int(response.json()["delivery_id"])


def attempt(harness: Harness, delivery_id: int) -> float | None:
    """What the worker task does on each run."""
    return attempt_delivery(harness.sessions, delivery_id, harness.settings)


def test_a_delivery_carries_a_slack_text_and_a_body_signed_with_the_webhooks_secret(
    harness: Harness, lab: Headers, receiver: Receiver
) -> None:
    webhook = create(harness, lab, receiver.url)
    assert attempt(harness, queue_test(harness, lab, webhook)) is None
    [(headers, body)] = receiver.received
    timestamp = headers["X-Sfumato-Timestamp"]
    expected = hmac.new(webhook["secret"].encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    assert headers["X-Sfumato-Signature"] == f"sha256={expected}"
    assert abs(int(timestamp) - time.time()) < 60
    sent = json.loads(body)
    assert (sent["event"], sent["team"], sent["status"]) == ("test", "lab", "test")
    assert "lab" in sent["text"]


def test_a_receiver_that_fails_twice_gets_the_delivery_on_the_third_attempt_after_doubling_waits(
    harness: Harness, lab: Headers, receiver: Receiver
) -> None:
    webhook = create(harness, lab, receiver.url)
    delivery_id = queue_test(harness, lab, webhook)
    receiver.statuses = [500, 503]
    waits = [attempt(harness, delivery_id) for _ in range(3)]
    assert waits == [retry_delay(1), retry_delay(2), None] and retry_delay(2) == 2 * retry_delay(1)
    history = harness.client.get(
        f"/api/v1/teams/{webhook['team_id']}/webhooks/{webhook['id']}/deliveries", headers=lab
    ).json()["items"]
    assert [(d["state"], [(a["attempt"], a["status_code"]) for a in d["attempts"]]) for d in history] == [
        ("delivered", [(1, 500), (2, 503), (3, 200)])
    ]
    assert len({body for _, body in receiver.received}) == 1  # every attempt sends the same body


def test_a_receiver_that_writes_to_the_platform_before_answering_is_not_blocked_by_the_delivery(
    harness: Harness, lab: Headers, receiver: Receiver
) -> None:
    """The POST runs outside any transaction: on SQLite one would hold the write lock until the answer."""
    webhook = create(harness, lab, receiver.url)
    delivery_id = queue_test(harness, lab, webhook)

    def write() -> None:
        with session_scope(harness.sessions) as session:
            session.execute(update(Team).where(Team.name == "lab").values(max_devices=4))

    receiver.on_post = write
    assert attempt(harness, delivery_id) is None
    with harness.session() as session:
        assert session.get_one(WebhookDelivery, delivery_id).state == "delivered"


def test_a_delivery_that_never_succeeds_stops_after_the_last_attempt_as_failed(
    harness: Harness, lab: Headers, receiver: Receiver
) -> None:
    webhook = create(harness, lab, receiver.url)
    delivery_id = queue_test(harness, lab, webhook)
    receiver.statuses = [500] * (MAX_ATTEMPTS + 1)
    waits = [attempt(harness, delivery_id) for _ in range(MAX_ATTEMPTS + 1)]
    assert waits[-2:] == [None, None] and len(receiver.received) == MAX_ATTEMPTS
    [delivery] = harness.client.get(
        f"/api/v1/teams/{webhook['team_id']}/webhooks/{webhook['id']}/deliveries", headers=lab
    ).json()["items"]
    assert delivery["state"] == "failed"


@pytest.mark.parametrize(
    "url",
    [
        "ftp://hooks.example.com/x",
        "javascript:alert(1)",
        "http://169.254.169.254/latest/meta-data",
        "http://[fe80::1]/hook",
        "http://metadata.google.internal/",
        "http://127.0.0.1:8000/api/v1/health",  # the platform itself (its public_url)
        "http://localhost:8000/hook",
    ],
)
def test_a_url_the_platform_may_not_call_is_refused_naming_url(harness: Harness, lab: Headers, url: str) -> None:
    response = harness.client.post(f"/api/v1/teams/{team_id(harness, lab)}/webhooks", json={"url": url}, headers=lab)
    assert response.status_code == 422, response.text
    assert response.json()["detail"][0]["field"] == "url"


def test_a_loopback_url_is_refused_unless_private_urls_are_allowed(harness: Harness, lab: Headers) -> None:
    app = harness.client.app
    app.state.settings = harness.settings.model_copy(update={"allow_private_urls": False})  # type: ignore[attr-defined]
    response = harness.client.post(
        f"/api/v1/teams/{team_id(harness, lab)}/webhooks", json={"url": "http://127.0.0.1:9/hook"}, headers=lab
    )
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "url", response.text


def test_members_see_the_teams_webhooks_and_only_admins_make_them(harness: Harness, lab: Headers) -> None:
    webhook = create(harness, lab, "https://hooks.example.com/services/T0/B0/x")
    member = harness.add_user("mia", "lab", "member")
    listed = harness.client.get(f"/api/v1/teams/{webhook['team_id']}/webhooks", headers=member).json()["items"]
    assert [w["id"] for w in listed] == [webhook["id"]] and "secret" not in listed[0]
    refused = harness.client.post(
        f"/api/v1/teams/{webhook['team_id']}/webhooks", json={"url": "https://hooks.example.com/y"}, headers=member
    )
    assert refused.status_code == 403, refused.text


def test_another_teams_webhook_is_not_found(harness: Harness, lab: Headers, studio: Headers) -> None:
    webhook = create(harness, lab, "https://hooks.example.com/services/T0/B0/x")
    own_team = team_id(harness, studio)
    for team in (webhook["team_id"], own_team):
        path = f"/api/v1/teams/{team}/webhooks/{webhook['id']}"
        answers = [
            harness.client.get(f"{path}/deliveries", headers=studio).status_code,
            harness.client.post(f"{path}/test", headers=studio).status_code,
            harness.client.delete(path, headers=studio).status_code,
        ]
        assert answers == [404, 404, 404], team
