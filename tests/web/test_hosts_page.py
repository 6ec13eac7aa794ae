"""The Hosts page: a lost host's drain, the DigenRL pool each device serves, what a queued pool job needs."""

from __future__ import annotations

import html
import re

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World, make_job
from sqlalchemy import select

from server.models import Allocation, Device, Team, User
from server.services.host_admin import drain_host
from server.services.hosts import DeviceInfo, register_host

POOLS = {"rollout": {"devices": 1, "gpu_model": "L40S"}, "trainer": {"devices": 1, "gpu_model": "H100"}}


def text_of(page: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page)))


def test_a_lost_drained_host_says_it_comes_back_drained(app: FastAPI, client: TestClient):
    with app.state.sessionmaker.begin() as session:
        host = register_host(session, "flaky-box", [DeviceInfo(0, "cuda", "NVIDIA H100", None)])
        drain_host(session, host.id)
        host.status = "lost"

    page = text_of(client.get("/hosts/body").text)

    assert "flaky-box lost draining when back" in page


def test_pool_devices_and_a_queued_pool_job_s_needs_are_shown(app: FastAPI, client: TestClient, world: World):
    with app.state.sessionmaker.begin() as session:
        owner = session.get(User, world.admin.id)
        team = session.get(Team, world.running.team_id)
        devices = [DeviceInfo(0, "cuda", "NVIDIA L40S", None), DeviceInfo(1, "cuda", "NVIDIA H100", None)]
        host = register_host(session, "mixed-box", devices)
        running = make_job(session, owner, team, "pools-running", "digenrl", status="running")
        waiting = make_job(session, owner, team, "pools-waiting", "digenrl", status="queued", priority=99)
        for job in (running, waiting):
            job.spec = {**job.spec, "resources": {"device_type": "cuda", "devices": 2, "pools": POOLS}}
        for device in session.scalars(select(Device).where(Device.host_id == host.id)):
            pool = "rollout" if device.index == 0 else "trainer"
            session.add(Allocation(job_id=running.id, attempt=1, device_id=device.id, host_id=host.id, pool=pool))

    page = text_of(client.get("/hosts/body").text)

    assert "pools-running digenrl rollout pool" in page and "pools-running digenrl trainer pool" in page
    assert "rollout 1 cuda 'L40S' + trainer 1 cuda 'H100'" in page
