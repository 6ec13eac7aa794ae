"""A pass's reconciliation on SQLite and PostgreSQL: lost hosts, tasks that never started, stale allocations,
cancel requests, a restarted worker."""

from __future__ import annotations

from pathlib import Path

from scheduler_passes import LOST_AFTER, AddHost, AddJob, finish, job, live_allocations, lose_host, run_pass
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Allocation, Host, Job
from server.services import job_runs
from server.services.host_admin import disable_host
from server.services.job_status import set_status
from server.services.placement_pass import NodeTask
from server.services.retry_policy import requeue_interrupted_jobs
from server.services.scheduler import schedule_once


def test_jobs_on_a_lost_host_are_requeued_or_failed_when_out_of_platform_restarts(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("flaky", devices=2)
    retried = add_job(devices=1, max_attempts=1)
    exhausted = add_job(devices=1, max_platform_restarts=0)
    run_pass(factory)
    with factory.begin() as session:
        for started in (retried, exhausted):
            set_status(session, session.get(Job, started.id), "running")
    lose_host(factory, "flaky")

    report = run_pass(factory)

    assert report.lost_hosts == ["flaky"]
    assert (report.requeued, report.failed) == ([retried.id], [exhausted.id])
    assert job(factory, retried.id).status == "queued"
    assert job(factory, exhausted.id).status == "failed"
    assert "host flaky lost" in job(factory, exhausted.id).error
    assert live_allocations(factory) == []
    assert report.placed == []  # nowhere to go while the only host is lost


def test_an_attempt_that_never_started_does_not_use_up_retries(factory, add_host: AddHost, add_job: AddJob):
    add_host("flaky", devices=1)
    single_try = add_job(max_attempts=1)
    run_pass(factory)
    lose_host(factory, "flaky")

    run_pass(factory)

    assert job(factory, single_try.id).status == "queued"


def test_allocations_of_finished_jobs_are_released(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=1)
    done = add_job()
    run_pass(factory)
    finish(factory, done.id, "failed")

    run_pass(factory)

    assert live_allocations(factory) == []


def test_a_job_the_broker_did_not_take_goes_back_to_the_queue(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=1)
    queued = add_job()

    def broker_down(task: NodeTask) -> None:
        raise ConnectionError("broker down")

    report = schedule_once(factory, broker_down, LOST_AFTER)

    assert report.placed == []
    back = job(factory, queued.id)
    assert back.status == "queued"
    assert "could not reach the broker for host.alpha" in back.wait_reason
    assert live_allocations(factory) == []


def test_a_queued_job_with_a_cancel_request_is_cancelled_not_placed(factory, add_host: AddHost, add_job: AddJob):
    add_host("alpha", devices=1)
    cancelled = add_job(cancel_requested=True)

    report = run_pass(factory)

    assert report.placed == []
    assert job(factory, cancelled.id).status == "cancelled"


def test_a_job_whose_task_never_started_goes_back_to_the_queue_without_using_an_attempt(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=1)
    lost_task = add_job(max_attempts=1)
    run_pass(factory)
    with factory.begin() as session:
        for allocation in session.scalars(select(Allocation)):
            allocation.created_at = allocation.created_at.replace(year=2000)

    sent: list[NodeTask] = []
    report = schedule_once(factory, sent.append, LOST_AFTER, scheduled_timeout_seconds=60)

    assert report.requeued == [lost_task.id]
    assert [(t.job_id, t.attempt) for t in sent] == [(lost_task.id, 2)]  # placed again at once, attempt 2
    assert job(factory, lost_task.id).status == "scheduled"


def two_node_job_running(factory: sessionmaker[Session], add_host: AddHost, add_job: AddJob) -> list[NodeTask]:
    """A 2-node job on alpha (node 0) and beta (node 1), both trainers started."""
    add_host("alpha", devices=1)
    add_host("beta", devices=1)
    add_job(nodes=2)
    sent: list[NodeTask] = []
    run_pass(factory, sent)
    with factory.begin() as session:
        for task in sent:
            job_runs.start_run(
                session, task.job_id, task.attempt, task.node_rank, task.host, Path("/tmp/unused"), node_token_key=b"k"
            )
            job_runs.mark_running(session, task.job_id, task.attempt, task.node_rank, task.host)
    return sorted(sent, key=lambda t: t.node_rank)


def held_by_host(factory: sessionmaker[Session]) -> dict[str, int]:
    with factory() as session:
        return {
            a.host.name: a.attempt for a in session.scalars(select(Allocation).where(Allocation.released_at.is_(None)))
        }


def test_a_lost_node_sends_the_job_back_as_a_whole_and_its_peers_are_told_to_stop(
    factory, add_host: AddHost, add_job: AddJob
):
    survivor, _ = two_node_job_running(factory, add_host, add_job)
    lose_host(factory, "beta")

    report = run_pass(factory)

    assert (report.lost_hosts, report.requeued) == (["beta"], [survivor.job_id])
    with factory() as session:
        assert job_runs.stop_reason(session, survivor.job_id, survivor.attempt) == job_runs.STOP_SUPERSEDED
    assert held_by_host(factory) == {"alpha": 1}  # the survivor keeps its device until its trainer has exited
    with factory.begin() as session:
        job_runs.finish_run(session, survivor.job_id, 1, 0, "alpha", -15, job_runs.STOP_SUPERSEDED, [])
    assert held_by_host(factory) == {}
    assert job(factory, survivor.job_id).status == "queued"


def test_a_running_job_whose_other_node_never_started_is_requeued_instead_of_waiting_at_the_rendezvous(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=1)
    add_host("beta", devices=1)
    spanning = add_job(nodes=2)
    sent: list[NodeTask] = []
    run_pass(factory, sent)
    started = next(t for t in sent if t.node_rank == 0)
    with factory.begin() as session:
        job_runs.mark_running(session, started.job_id, started.attempt, 0, started.host)  # node 1's task was lost
        for allocation in session.scalars(select(Allocation)):
            allocation.created_at = allocation.created_at.replace(year=2000)

    report = schedule_once(factory, [].append, LOST_AFTER, scheduled_timeout_seconds=60)

    assert report.requeued == [spanning.id]
    with factory() as session:
        assert job_runs.stop_reason(session, spanning.id, 1) == job_runs.STOP_SUPERSEDED
    assert held_by_host(factory) == {started.host: 1}  # node 1's device is free at once: nothing runs there


def test_a_restarted_worker_frees_an_old_attempt_s_devices_without_requeuing_the_new_attempt(
    factory, add_host: AddHost, add_job: AddJob
):
    add_host("alpha", devices=2)
    beta = add_host("beta", devices=1)
    moved = add_job()
    run_pass(factory)  # best fit: beta
    with factory.begin() as session:
        job_runs.mark_running(session, moved.id, 1, 0, "beta")
        disable_host(session, beta.id)  # attempt 1 is being stopped on beta
    run_pass(factory)
    assert held_by_host(factory) == {"alpha": 2, "beta": 1}

    with factory.begin() as session:
        assert requeue_interrupted_jobs(session, session.get(Host, beta.id)) == []

    assert held_by_host(factory) == {"alpha": 2}
    assert job(factory, moved.id).status == "scheduled"
