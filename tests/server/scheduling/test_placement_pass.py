"""Placing queued jobs on SQLite and PostgreSQL: order, atomic allocation, wait reasons, quotas, backfill."""

from __future__ import annotations

import threading

import pytest
from scheduler_passes import AddHost, AddJob, finish, job, live_allocations, run_pass
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from server.models import Allocation, Device, Job, JobEvent, Team
from server.services.placement_pass import NodeTask


def test_higher_priority_runs_first_then_first_come_first_served(factory, add_host: AddHost, add_job: AddJob):
    add_host("solo", devices=1)
    low = add_job(priority=0)
    high_first = add_job(priority=5)
    high_second = add_job(priority=5)

    order = []
    for _ in range(3):
        sent: list[NodeTask] = []
        run_pass(factory, sent)
        assert len(sent) == 1
        order.append(sent[0].job_id)
        finish(factory, sent[0].job_id)

    assert order == [high_first.id, high_second.id, low.id]


def test_placement_marks_the_job_scheduled_counts_the_attempt_and_sends_to_the_host_queue(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=2)
    queued = add_job(devices=2)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert sent == [NodeTask(queued.id, 1, 0, "alpha", "host.alpha")]
    placed = job(factory, queued.id)
    assert (placed.status, placed.attempt, placed.wait_reason) == ("scheduled", 1, None)
    assert sorted(a.device_id for a in live_allocations(factory)) == sorted(d.id for d in _devices(factory, "alpha"))
    with factory() as session:
        events = session.scalars(select(JobEvent.status).where(JobEvent.job_id == queued.id)).all()
    assert events == ["scheduled"]


def _devices(factory: sessionmaker[Session], host: str) -> list[Device]:
    with factory() as session:
        return [d for d in session.scalars(select(Device)) if d.host.name == host]


def test_a_job_that_does_not_fit_waits_with_the_reason(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=2)
    first = add_job(devices=1)
    run_pass(factory)
    two = add_job(devices=2)
    three = add_job(devices=3)

    report = run_pass(factory)

    assert report.placed == []
    assert set(report.waiting) == {two.id, three.id}
    assert job(factory, two.id).wait_reason == "needs 2 cpu devices; largest free host has 1"
    assert job(factory, three.id).wait_reason == "needs 3 cpu devices; the largest online host has 2"
    assert job(factory, two.id).status == "queued"

    finish(factory, first.id)
    sent: list[NodeTask] = []
    run_pass(factory, sent)
    assert [t.job_id for t in sent] == [two.id]
    assert job(factory, two.id).wait_reason is None


def test_gpu_model_constraint_places_only_on_matching_devices(factory, add_host: AddHost, add_job: AddJob):
    add_host("h100-box", devices=2, device_type="cuda", model="NVIDIA H100 80GB HBM3")
    add_host("a100-box", devices=2, device_type="cuda", model="NVIDIA A100-SXM4-40GB")
    wants_a100 = add_job(devices=2, device_type="cuda", gpu_model="a100")
    wants_h200 = add_job(devices=1, device_type="cuda", gpu_model="H200")
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert [(t.job_id, t.host) for t in sent] == [(wants_a100.id, "a100-box")]
    assert job(factory, wants_h200.id).wait_reason == (
        "needs 1 cuda device of model 'H200'; the largest online host has 0"
    )


def test_cpu_jobs_never_take_cuda_devices(factory, add_host: AddHost, add_job: AddJob):
    add_host("gpu-box", devices=4, device_type="cuda", model="NVIDIA H100")
    cpu_job = add_job(devices=1, device_type="cpu")

    assert run_pass(factory).placed == []
    assert job(factory, cpu_job.id).wait_reason == "needs 1 cpu device; the largest online host has 0"


def test_multi_node_job_gets_one_task_per_host_with_node_ranks(factory, add_host: AddHost, add_job: AddJob):
    add_host("node-a", devices=1)
    add_host("node-b", devices=1)
    spanning = add_job(devices=1, nodes=2)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert sorted(t.node_rank for t in sent) == [0, 1]
    assert {t.host for t in sent} == {"node-a", "node-b"}
    assert {t.job_id for t in sent} == {spanning.id}


def test_concurrent_schedulers_never_put_a_device_in_two_live_allocations(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=3)
    add_host("beta", devices=2)
    jobs = [add_job(devices=1 + i % 2, priority=i % 3) for i in range(12)]
    sent: list[NodeTask] = []
    errors: list[BaseException] = []

    def scheduler() -> None:
        try:
            for _ in range(5):
                run_pass(factory, sent)
        except BaseException as exc:  # surfaced in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=scheduler) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()

    assert errors == []
    live = live_allocations(factory)
    assert len({a.device_id for a in live}) == len(live)
    assert len(live) <= 5
    placed = [t.job_id for t in sent]
    assert len(placed) == len(set(placed)), "a job was sent twice"
    with factory() as session:
        scheduled = session.scalar(select(func.count()).select_from(Job).where(Job.status == "scheduled"))
        assert scheduled == len(placed) and scheduled >= 2
        assert all(session.get(Job, j.id).attempt <= 1 for j in jobs)


def test_a_team_at_its_quota_waits_while_other_teams_run(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=4)
    with factory.begin() as session:
        capped, free_team = Team(name="capped", max_devices=2), Team(name="open")
        session.add_all([capped, free_team])
        session.flush()
        capped_id, open_id = capped.id, free_team.id
    first, second, third = (add_job(team_id=capped_id) for _ in range(3))
    other = add_job(team_id=open_id)

    sent: list[NodeTask] = []
    report = run_pass(factory, sent)

    assert sorted(t.job_id for t in sent) == sorted([first.id, second.id, other.id])
    assert report.waiting == {third.id: "team capped quota: 2 of 2 devices in use, needs 1 more"}
    finish(factory, first.id)
    sent.clear()
    run_pass(factory, sent)
    assert [t.job_id for t in sent] == [third.id]


def _team(factory: sessionmaker[Session], name: str) -> int:
    with factory.begin() as session:
        team = Team(name=name)
        session.add(team)
        session.flush()
        return team.id


def test_backfill_never_takes_the_devices_the_head_of_the_queue_waits_for(factory, add_host: AddHost, add_job: AddJob):
    lab = _team(factory, "lab")
    add_host("big", devices=2)
    add_host("small", devices=1)
    on_small = add_job()
    run_pass(factory)  # best fit: the small host
    on_big = add_job()
    run_pass(factory)
    finish(factory, on_small.id)  # now one device free on each host
    head = add_job(devices=2, team_id=lab)
    backfilled = add_job(team_id=lab)
    delaying = add_job(team_id=lab)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    assert [(t.job_id, t.host) for t in sent] == [(backfilled.id, "small")]
    assert job(factory, head.id).wait_reason == "needs 2 cpu devices; largest free host has 1"
    assert job(factory, delaying.id).wait_reason == (
        f"would delay job {head.id} at the head of the queue; waits for hosts it does not need"
    )
    finish(factory, on_big.id)
    sent.clear()
    run_pass(factory, sent)
    assert [(t.job_id, t.host) for t in sent] == [(head.id, "big")]


def test_a_wait_reason_never_names_another_teams_job(factory, add_host: AddHost, add_job: AddJob):
    """Attack 8: the reason named another team's job, which is a 404 for the reader of the waiting job."""
    lab, studio = _team(factory, "lab"), _team(factory, "studio")
    add_host("big", devices=2)
    add_host("small", devices=1)
    on_small = add_job()
    run_pass(factory)
    add_job()
    run_pass(factory)
    finish(factory, on_small.id)
    head = add_job(devices=2, team_id=lab)
    add_job(team_id=studio)  # backfilled on the small host
    delaying = add_job(team_id=studio)

    run_pass(factory)

    reason = job(factory, delaying.id).wait_reason
    assert reason == "would delay a higher-priority job of another team at the head of the queue; " + (
        "waits for hosts it does not need"
    )
    assert str(head.id) not in (reason or "")


def test_the_database_refuses_a_second_live_allocation_of_a_device(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=1)
    holder, intruder = add_job(), add_job()
    run_pass(factory)
    with factory() as session:
        device_id, host_id = session.execute(select(Device.id, Device.host_id)).one()

    with pytest.raises(IntegrityError), factory.begin() as session:
        session.add(Allocation(job_id=intruder.id, attempt=1, device_id=device_id, host_id=host_id))
    finish(factory, holder.id)
    run_pass(factory)  # releases the finished job's allocation, then places the other job on the device
    assert job(factory, intruder.id).status == "scheduled"
