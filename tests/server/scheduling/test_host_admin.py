"""An admin drains, disables and re-enables hosts and devices; the scheduler obeys; others may not."""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.models import ApiToken, Device, Host, Job, User
from server.services.auth import ensure_admin
from server.services.job_status import set_status
from server.services.placement_pass import NodeTask
from server.services.scheduler import schedule_once
from server.services.tokens import hash_token
from sfumato.app import create_app

AddHost = Callable[..., Host]
AddJob = Callable[..., Job]


@pytest.fixture
def api(
    factory: sessionmaker[Session], migrated_database_url: str, tmp_path: Path
) -> Iterator[tuple[TestClient, dict, dict]]:
    """The real app on the test database, with an admin's and a plain member's bearer headers."""
    settings = Settings(
        home=tmp_path / "home",
        database_url=migrated_database_url,
        admin_token="sfu_admin-token",
        secret_key=secrets.token_hex(32),
    )
    with factory() as session:
        ensure_admin(session, settings)
    with factory.begin() as session:
        member = User(username="member")
        session.add(member)
        session.flush()
        session.add(ApiToken(user_id=member.id, name="t", token_hash=hash_token("sfu_member-token")))
    with TestClient(create_app(settings)) as client:
        yield client, {"Authorization": "Bearer sfu_admin-token"}, {"Authorization": "Bearer sfu_member-token"}


def placed(factory: sessionmaker[Session]) -> list[NodeTask]:
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    return sent


def test_a_drained_host_takes_no_new_job_but_keeps_its_running_one(factory, add_host: AddHost, add_job: AddJob, api):
    client, admin, _ = api
    host = add_host("alpha", devices=2)
    running = add_job()
    assert [t.job_id for t in placed(factory)] == [running.id]

    response = client.post(f"/api/v1/hosts/{host.id}/drain", headers=admin)

    assert response.status_code == 200 and response.json()["status"] == "draining"
    waiting = add_job()
    assert placed(factory) == []
    with factory() as session:
        assert session.get(Job, running.id).status == "scheduled"
        assert "the largest online host has 0" in session.get(Job, waiting.id).wait_reason
    assert client.post(f"/api/v1/hosts/{host.id}/enable", headers=admin).json()["status"] == "online"
    assert [t.job_id for t in placed(factory)] == [waiting.id]


def test_disabling_a_host_sends_its_jobs_back_to_the_queue(factory, add_host: AddHost, add_job: AddJob, api):
    client, admin, _ = api
    host = add_host("alpha", devices=1)
    add_host("beta", devices=1, model="Other CPU")
    moved = add_job()
    placed(factory)
    with factory.begin() as session:
        set_status(session, session.get(Job, moved.id), "running")

    response = client.post(f"/api/v1/hosts/{host.id}/disable", headers=admin)

    assert response.json() == {"id": host.id, "name": "alpha", "status": "disabled", "requeued_jobs": [moved.id]}
    assert [(t.job_id, t.host, t.attempt) for t in placed(factory)] == [(moved.id, "beta", 2)]


def test_a_disabled_device_takes_no_new_job(factory, add_host: AddHost, add_job: AddJob, api):
    client, admin, _ = api
    add_host("alpha", devices=2)
    with factory() as session:
        first = session.scalars(select(Device.id).order_by(Device.index)).first()

    body = client.post(f"/api/v1/devices/{first}/disable", headers=admin).json()

    assert body["enabled"] is False and body["index"] == 0
    big = add_job(devices=2)
    small = add_job(devices=1)
    sent = placed(factory)
    assert [t.job_id for t in sent] == [small.id]  # the 2-device job waits
    with factory() as session:
        assert session.get(Job, big.id).wait_reason == "needs 2 cpu devices; the largest online host has 1"
    assert client.post(f"/api/v1/devices/{first}/enable", headers=admin).json()["enabled"] is True


def test_only_an_admin_may_change_the_inventory(factory, add_host: AddHost, api):
    client, _, member = api
    host = add_host("alpha")

    assert client.post(f"/api/v1/hosts/{host.id}/disable", headers=member).status_code == 403
    assert client.post("/api/v1/hosts/999/drain", headers=api[1]).status_code == 404
    assert client.post("/api/v1/devices/999/disable", headers=api[1]).status_code == 404
