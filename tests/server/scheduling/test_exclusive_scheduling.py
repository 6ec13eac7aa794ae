"""`resources.exclusive: true` holds a whole host: fair timing for a comparison."""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from server.models import Host, Job
from server.services.job_status import set_status
from server.services.placement_pass import NodeTask
from server.services.scheduler import schedule_once

AddHost = Callable[..., Host]
AddJob = Callable[..., Job]


def run_pass(factory: sessionmaker[Session]) -> list[NodeTask]:
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    return sent


def finish(factory: sessionmaker[Session], job_id: int) -> None:
    with factory.begin() as session:
        set_status(session, session.get_one(Job, job_id), "succeeded")


def wait_reason(factory: sessionmaker[Session], job_id: int) -> str | None:
    with factory() as session:
        return session.get_one(Job, job_id).wait_reason


def test_an_exclusive_job_waits_for_a_host_with_no_device_in_use(factory, add_host: AddHost, add_job: AddJob):
    add_host("solo", devices=4)
    small = add_job(devices=1)
    assert [t.job_id for t in run_pass(factory)] == [small.id]
    whole = add_job(devices=1, exclusive=True)
    assert run_pass(factory) == []
    assert "resources.exclusive: waits for a host with no device in use" in (wait_reason(factory, whole.id) or "")
    finish(factory, small.id)
    assert [t.job_id for t in run_pass(factory)] == [whole.id]


def test_no_other_job_starts_on_the_host_an_exclusive_job_holds(factory, add_host: AddHost, add_job: AddJob):
    add_host("solo", devices=4)
    whole = add_job(devices=1, exclusive=True)
    assert [t.job_id for t in run_pass(factory)] == [whole.id]
    beside = add_job(devices=1)
    assert run_pass(factory) == []  # three devices are free, but the host is held whole
    finish(factory, whole.id)
    assert [t.job_id for t in run_pass(factory)] == [beside.id]


def test_in_one_pass_a_later_job_goes_to_another_host_than_the_exclusive_one(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=2)
    add_host("beta", devices=2)
    whole = add_job(devices=1, exclusive=True, priority=5)
    other = add_job(devices=1)
    placed = {t.job_id: t.host for t in run_pass(factory)}
    assert set(placed) == {whole.id, other.id} and placed[whole.id] != placed[other.id]
