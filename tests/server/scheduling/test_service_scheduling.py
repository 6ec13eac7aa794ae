"""Reward services in scheduler passes, on SQLite and PostgreSQL: a placed service holds its devices against
jobs, a job naming a service waits until it is healthy and then gets its URL, a service whose host is lost is
placed again, and one that never becomes healthy fails and frees its devices."""

from __future__ import annotations

from pathlib import Path

import pytest
from scheduler_passes import AddHost, AddJob, job, live_allocations, lose_host, run_pass
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from server.models import Allocation, Job, RewardService, ServiceState, Team
from server.services import service_runs
from server.services.placement_pass import NodeTask
from server.services.service_placement import ServiceTask
from server.services.service_rewards import trainer_spec
from server.services.service_state import set_state


def add_service(factory: sessionmaker[Session], name: str = "bright", devices: int = 1) -> RewardService:
    with factory.begin() as session:
        team = Team(name=f"team-{name}")
        session.add(team)
        session.flush()
        service = RewardService(name=name, team_id=team.id, reward="brightness", device_type="cpu", devices=devices)
        session.add(service)
        session.flush()
        return service


def state(factory: sessionmaker[Session], service_id: int) -> RewardService:
    with factory() as session:
        found = session.get(RewardService, service_id)
        assert found is not None
        return found


def serve(factory: sessionmaker[Session], task: ServiceTask, tmp_path: Path) -> None:
    """What the worker does when its server answers /healthz: claim the generation, bind, mark healthy."""
    with factory.begin() as session:
        assert service_runs.start_service(session, task.service_id, task.generation, task.host, tmp_path)
        service_runs.mark_listening(session, task.service_id, task.generation, "http://127.0.0.1:41234")
        service_runs.mark_healthy(session, task.service_id, task.generation)


def test_a_placed_service_holds_its_device_so_no_job_gets_it(factory, add_host: AddHost, add_job: AddJob):
    add_host("solo", devices=1)
    service = add_service(factory)
    sent: list[NodeTask | ServiceTask] = []

    run_pass(factory, sent)
    waiting = add_job()
    report = run_pass(factory, sent)

    assert sent == [ServiceTask(service.id, 1, "solo", "host.solo")]
    assert state(factory, service.id).state == "starting"
    assert report.placed == [] and job(factory, waiting.id).status == "queued"
    assert "largest free host has 0" in (job(factory, waiting.id).wait_reason or "")
    [held] = live_allocations(factory)
    with pytest.raises(IntegrityError), factory.begin() as session:  # the database refuses a second holder too
        session.add(Allocation(job_id=waiting.id, attempt=1, device_id=held.device_id, host_id=held.host_id))


def test_a_job_naming_a_service_waits_until_it_is_healthy_then_runs_against_its_url(
    factory, add_host: AddHost, add_job: AddJob, tmp_path: Path
):
    add_host("alpha", devices=2)
    service = add_service(factory)
    with factory.begin() as session:
        queued = Job(
            name="scorer",
            spec={"name": "scorer", "reward": [{"name": "service", "service": "bright", "weight": 2.0, "path": None}]},
            algorithm="flow_grpo",
            executor="native",
            model_family="sd3",
            device_type="cpu",
            devices=1,
            team_id=service.team_id,
        )
        session.add(queued)
    sent: list[NodeTask | ServiceTask] = []

    run_pass(factory, sent)
    assert job(factory, queued.id).wait_reason == "waits for reward service 'bright' (reward.0.service) to be healthy"
    [task] = sent
    assert isinstance(task, ServiceTask)
    serve(factory, task, tmp_path)
    run_pass(factory, sent)

    assert job(factory, queued.id).status == "scheduled"
    with factory() as session:
        spec = trainer_spec(session, session.get_one(Job, queued.id))
    assert spec is not None
    assert spec["reward"] == [{"name": "remote", "url": "http://127.0.0.1:41234", "weight": 2.0}]


def test_a_service_on_a_lost_host_goes_back_to_pending_and_is_placed_again(factory, add_host: AddHost):
    add_host("alpha", devices=1, heartbeat_age_s=0)
    service = add_service(factory)
    run_pass(factory)
    lose_host(factory, "alpha")
    run_pass(factory)
    assert (state(factory, service.id).state, state(factory, service.id).url) == ("pending", None)

    add_host("beta", devices=1)
    sent: list[NodeTask | ServiceTask] = []
    run_pass(factory, sent)
    assert sent == [ServiceTask(service.id, 2, "beta", "host.beta")]


def test_a_service_that_never_becomes_healthy_fails_and_frees_its_devices(factory, add_host: AddHost, tmp_path: Path):
    add_host("alpha", devices=2)
    service = add_service(factory, devices=2)
    sent: list[NodeTask | ServiceTask] = []
    run_pass(factory, sent)
    [task] = sent
    with factory.begin() as session:
        assert service_runs.start_service(session, task.service_id, task.generation, "alpha", tmp_path)
    restart = []
    for _ in range(service_runs.MAX_FAILED_STARTS):
        with factory.begin() as session:
            restart.append(
                service_runs.mark_died(session, service.id, 1, "exited with code 2", ["no such reward"], False)
            )

    assert restart == [True] * (service_runs.MAX_FAILED_STARTS - 1) + [False]
    failed = state(factory, service.id)
    assert failed.state == "failed" and "never became healthy in 3 starts" in (failed.error or "")
    assert "no such reward" in (failed.error or "")
    assert live_allocations(factory) == []


def test_stopping_a_placed_service_frees_its_devices_when_its_worker_finishes(
    factory, add_host: AddHost, tmp_path: Path
):
    add_host("alpha", devices=1)
    service = add_service(factory)
    sent: list[NodeTask | ServiceTask] = []
    run_pass(factory, sent)
    serve(factory, sent[0], tmp_path)  # type: ignore[arg-type]
    with factory.begin() as session:
        found = session.get_one(RewardService, service.id)
        found.stop_requested = True
        set_state(session, found, ServiceState.STOPPING)
        assert service_runs.stop_reason(session, service.id, 1) == service_runs.STOP_REQUESTED
        assert service_runs.finish_service(session, service.id, 1, service_runs.STOP_REQUESTED) == "stopped"
    assert live_allocations(factory) == []
