"""Host registration, heartbeat and device inventory."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.config import Settings
from server.models import Device, Host, Job
from server.services.host_admin import disable_host, drain_host
from server.services.hosts import DeviceInfo, heartbeat, mark_lost_hosts, register_host
from server.services.job_status import set_status
from server.services.placement_pass import NodeTask
from server.services.retry_policy import requeue_interrupted_jobs
from server.services.scheduler import schedule_once
from worker.host_agent import detect_devices


def devices_of(factory: sessionmaker[Session], name: str) -> list[tuple[int, str, bool]]:
    with factory() as session:
        host = session.scalar(select(Host).where(Host.name == name))
        return [(d.index, d.model, d.enabled) for d in session.scalars(select(Device).where(Device.host_id == host.id))]


def test_reregistering_updates_devices_and_disables_the_ones_that_vanished(factory):
    with factory.begin() as session:
        register_host(session, "box", [DeviceInfo(i, "cuda", "A100", 40 << 30) for i in range(3)])
    with factory.begin() as session:
        register_host(
            session, "box", [DeviceInfo(0, "cuda", "A100", 40 << 30), DeviceInfo(1, "cuda", "H100", 80 << 30)]
        )

    assert sorted(devices_of(factory, "box")) == [(0, "A100", True), (1, "H100", True), (2, "A100", False)]


def status_of(factory: sessionmaker[Session], name: str) -> tuple[str, str]:
    with factory() as session:
        host = session.scalar(select(Host).where(Host.name == name))
        return host.status, host.admin_state


def test_a_disabled_host_stays_disabled_when_its_worker_restarts(factory):
    with factory.begin() as session:
        disable_host(session, register_host(session, "box", [DeviceInfo(0, "cpu", "cpu")]).id)
    with factory.begin() as session:
        assert register_host(session, "box", [DeviceInfo(0, "cpu", "cpu")]).status == "disabled"


def test_a_drained_host_that_is_lost_comes_back_drained(factory, add_host):
    host = add_host("box", heartbeat_age_s=60)
    with factory.begin() as session:
        drain_host(session, host.id)
    with factory.begin() as session:
        assert [h.name for h in mark_lost_hosts(session, 30.0)] == ["box"]
    assert status_of(factory, "box") == ("lost", "draining")

    with factory.begin() as session:
        assert heartbeat(session, "box")

    assert status_of(factory, "box") == ("draining", "draining")


def test_a_drained_host_whose_worker_reregisters_after_being_lost_stays_drained(factory, add_host):
    host = add_host("box", heartbeat_age_s=60)
    with factory.begin() as session:
        drain_host(session, host.id)
        mark_lost_hosts(session, 30.0)

    with factory.begin() as session:
        register_host(session, "box", [DeviceInfo(0, "cpu", "Test CPU")])

    assert status_of(factory, "box") == ("draining", "draining")


def test_draining_a_lost_host_keeps_it_lost_until_it_heartbeats(factory, add_host):
    host = add_host("box", heartbeat_age_s=60)
    with factory.begin() as session:
        mark_lost_hosts(session, 30.0)
        drain_host(session, host.id)

    assert status_of(factory, "box") == ("lost", "draining")


def test_a_silent_host_is_lost_and_its_next_heartbeat_brings_it_back(factory, add_host):
    add_host("quiet", heartbeat_age_s=60)
    add_host("chatty", heartbeat_age_s=1)
    with factory.begin() as session:
        assert [h.name for h in mark_lost_hosts(session, 30.0)] == ["quiet"]
    with factory.begin() as session:
        assert heartbeat(session, "quiet")
        assert not heartbeat(session, "never-registered")
    with factory() as session:
        assert session.scalar(select(Host.status).where(Host.name == "quiet")) == "online"


def test_a_restarted_worker_sends_the_jobs_it_was_running_back_to_the_queue(factory, add_host, add_job):
    host = add_host("box", devices=1)
    interrupted = add_job()
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    with factory.begin() as session:
        set_status(session, session.get(Job, interrupted.id), "running")

    with factory.begin() as session:
        assert requeue_interrupted_jobs(session, session.get(Host, host.id)) == [interrupted.id]
    with factory() as session:
        assert session.get(Job, interrupted.id).status == "queued"


def test_a_host_without_cuda_offers_its_cpu_slots():
    devices = detect_devices(Settings(worker_cpu_slots=3))

    if devices[0].device_type == "cuda":  # a GPU machine lists its GPUs instead
        assert all(d.device_type == "cuda" and d.memory_bytes for d in devices)
        return
    assert [(d.index, d.device_type) for d in devices] == [(0, "cpu"), (1, "cpu"), (2, "cpu")]
    assert devices[0].model
