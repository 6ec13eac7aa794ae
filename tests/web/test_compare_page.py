"""The compare page renders the compare service's answer, and warns when compared jobs shared a host."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World
from sqlalchemy import select

from server.models import Allocation, Device, utcnow


def _url(ids: list[int]) -> str:
    return "/compare?" + "&".join(f"job={i}" for i in ids)


def test_compared_jobs_that_shared_a_host_are_named_in_a_warning(
    client: TestClient, world: World, app: FastAPI
) -> None:
    beside = world.finished[0]
    with app.state.sessionmaker() as session:  # it held a device of the running job's host while that ran
        held = select(Allocation.device_id).where(Allocation.job_id == world.running.id)
        device = session.scalars(select(Device).where(Device.id.not_in(held))).first()
        assert device is not None
        session.add(
            Allocation(job_id=beside.id, attempt=1, device_id=device.id, host_id=device.host_id, released_at=utcnow())
        )
        session.commit()
    html = client.get(_url([world.running.id, beside.id])).text
    warning = html.split('id="shared-hosts"', 1)[1].split("</div>", 1)[0]
    assert f"#{world.running.id} {world.running.name} shared gpu-node-1 with" in warning
    assert f'<a href="/jobs/{beside.id}">#{beside.id} {beside.name}</a>' in warning


def test_jobs_that_ran_alone_carry_no_shared_host_warning(client: TestClient, world: World) -> None:
    html = client.get(_url([j.id for j in world.finished])).text
    assert 'id="shared-hosts"' not in html
