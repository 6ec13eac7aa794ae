"""What a scheduler pass records and decides beyond the first fit, on SQLite and PostgreSQL: the job event names the
hosts (and pools) an attempt starts on, an exclusive job never shares a host with a job running there or placed
earlier in the same pass, a job no host could hold is told so even while a head of the queue waits, and a node task
carries what the worker's run_job task takes."""

from __future__ import annotations

import inspect

from scheduler_passes import AddHost, AddJob, run_pass
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import JobEvent
from server.services.hosts import DeviceInfo, register_host
from server.services.placement_pass import NodeTask
from worker.tasks import run_job

L40S, H100 = "NVIDIA L40S", "NVIDIA H100 80GB HBM3"


def scheduled_message(factory: sessionmaker[Session], job_id: int) -> str | None:
    with factory() as session:
        return session.scalar(select(JobEvent.message).where(JobEvent.job_id == job_id, JobEvent.status == "scheduled"))


def test_the_scheduled_event_names_the_attempt_and_its_hosts_in_node_order(factory, add_host: AddHost, add_job: AddJob):
    add_host("node-a", devices=1)
    add_host("node-b", devices=1)
    spanning = add_job(devices=1, nodes=2)
    sent: list[NodeTask] = []

    run_pass(factory, sent)

    hosts = ", ".join(task.host for task in sorted(sent, key=lambda task: task.node_rank))
    assert scheduled_message(factory, spanning.id) == f"attempt 1 on {hosts}"


def test_the_scheduled_event_names_each_host_s_pools_rollout_first(factory, add_job: AddJob):
    with factory.begin() as session:
        register_host(session, "mixed", [DeviceInfo(i, "cuda", model, None) for i, model in enumerate([H100, L40S])])
    pools = {"rollout": {"devices": 1, "gpu_model": "L40S"}, "trainer": {"devices": 1, "gpu_model": "H100"}}
    shared = add_job(device_type="cuda", pools=pools)

    run_pass(factory)

    assert scheduled_message(factory, shared.id) == "attempt 1 on mixed (rollout + trainer)"


def test_an_exclusive_job_takes_no_host_where_a_job_runs_or_was_placed_earlier_in_the_pass(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("l40s-box", devices=2, device_type="cuda", model=L40S)
    add_host("h100-box", devices=2, device_type="cuda", model=H100)
    running = add_job(devices=1, device_type="cuda", gpu_model="L40S")
    run_pass(factory)
    placed_first = add_job(devices=1, device_type="cuda", gpu_model="H100", priority=9)
    whole = add_job(devices=1, device_type="cuda", exclusive=True, priority=5)
    sent: list[NodeTask] = []

    report = run_pass(factory, sent)

    assert [(task.job_id, task.host) for task in sent] == [(placed_first.id, "h100-box")]
    assert set(report.waiting) == {whole.id} and running.id not in report.waiting


def test_a_job_no_host_could_hold_is_told_so_while_a_head_of_the_queue_waits(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=2)
    add_job(devices=1)
    run_pass(factory)
    head = add_job(devices=2, priority=9)
    too_big = add_job(devices=3)

    report = run_pass(factory)

    assert report.waiting[head.id] == "needs 2 cpu devices; largest free host has 1"
    assert report.waiting[too_big.id] == "needs 3 cpu devices; the largest online host has 2"


def test_a_node_task_carries_the_arguments_of_the_worker_s_run_job_task() -> None:
    task = NodeTask(job_id=7, attempt=2, node_rank=1, host="alpha", queue="host.alpha")
    bound = inspect.signature(run_job.run).bind(**task.task_kwargs())
    assert bound.arguments == {"job_id": 7, "attempt": 2, "node_rank": 1}
