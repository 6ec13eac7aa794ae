"""The platform's own restarts are counted apart from retries after the job's own failures, each against its own
limit, so a job never reads "attempt 4 / 3" (services.attempt_counts, services.retry_policy)."""

from __future__ import annotations

from pathlib import Path

from scheduler_passes import LOST_AFTER, AddHost, AddJob, job
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Allocation, Host
from server.services import job_runs
from server.services.attempt_counts import AttemptCounts, JobLimits, attempt_counts, count_ends
from server.services.job_attempts import AttemptEnd
from server.services.placement_pass import NodeTask
from server.services.retry_policy import requeue_interrupted_jobs
from server.services.scheduler import schedule_once


def place(factory: sessionmaker[Session]) -> NodeTask:
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, LOST_AFTER, scheduled_timeout_seconds=60)
    [task] = sent
    return task


def start(factory: sessionmaker[Session], task: NodeTask, tmp_path: Path) -> None:
    with factory.begin() as session:
        job_runs.start_run(session, task.job_id, task.attempt, 0, "alpha", tmp_path, node_token_key=b"k")
        job_runs.mark_running(session, task.job_id, task.attempt, 0, "alpha")


def restart_worker(factory: sessionmaker[Session]) -> None:
    with factory.begin() as session:
        requeue_interrupted_jobs(session, session.scalars(select(Host).where(Host.name == "alpha")).one())


def oom_kill(factory: sessionmaker[Session], task: NodeTask) -> str | None:
    with factory.begin() as session:
        return job_runs.finish_run(session, task.job_id, task.attempt, 0, "alpha", -9, None, ["Killed"])


def lose_task(factory: sessionmaker[Session]) -> None:
    """The broker lost the task: the placement is old and its trainer never started."""
    with factory.begin() as session:
        for allocation in session.scalars(select(Allocation).where(Allocation.released_at.is_(None))):
            allocation.created_at = allocation.created_at.replace(year=2000)


def counts(factory: sessionmaker[Session], job_id: int) -> AttemptCounts:
    with factory() as session:
        row = job(factory, job_id)
        limits = JobLimits(job_id, row.attempt, row.max_attempts, row.max_platform_restarts)
        return attempt_counts(session, [limits])[job_id]


def test_a_platform_restart_does_not_use_up_the_attempts_for_the_job_s_own_failures(
    factory, add_host: AddHost, add_job: AddJob, tmp_path: Path
):
    add_host("alpha", devices=1)
    single_try = add_job(max_attempts=1)
    start(factory, place(factory), tmp_path)

    restart_worker(factory)

    found = counts(factory, single_try.id)
    assert (job(factory, single_try.id).status, found.platform_restarts, found.retries_after_failure) == (
        "queued",
        1,
        0,
    )


def test_the_attempt_number_is_the_first_attempt_plus_retries_after_failure_plus_platform_restarts(
    factory, add_host: AddHost, add_job: AddJob, tmp_path: Path
):
    add_host("alpha", devices=1)
    four = add_job(max_attempts=3, max_platform_restarts=10)
    start(factory, place(factory), tmp_path)
    restart_worker(factory)  # attempt 1: the platform
    second = place(factory)
    start(factory, second, tmp_path)
    assert oom_kill(factory, second) == "queued"  # attempt 2: the job's own failure
    place(factory)
    lose_task(factory)  # attempt 3: the platform lost its task; placed again as attempt 4
    start(factory, place(factory), tmp_path)

    found = counts(factory, four.id)

    assert (found.attempt, found.retries_after_failure, found.platform_restarts) == (4, 1, 2)
    assert found.summary == "attempt 4 · 1 retry after failure (max 2) · 2 restarts of the platform (max 10)"


def test_the_job_fails_once_its_own_failures_used_its_attempts_however_often_the_platform_restarted(
    factory, add_host: AddHost, add_job: AddJob, tmp_path: Path
):
    add_host("alpha", devices=1)
    fragile = add_job(max_attempts=2)
    start(factory, place(factory), tmp_path)
    restart_worker(factory)
    first_failure = place(factory)
    start(factory, first_failure, tmp_path)
    assert oom_kill(factory, first_failure) == "queued"
    second_failure = place(factory)
    start(factory, second_failure, tmp_path)

    assert oom_kill(factory, second_failure) == "failed"
    assert job(factory, fragile.id).error.endswith("; no attempts left (2 of 2 used)")


def test_a_user_retry_starts_a_new_run_whose_counts_begin_at_zero() -> None:
    ends = [(1, AttemptEnd.PLATFORM), (2, AttemptEnd.FAILURE), (3, AttemptEnd.FINISHED), (4, AttemptEnd.PLATFORM)]

    assert count_ends(5, ends) == (0, 1)
    assert count_ends(3, ends[:3]) == (1, 1)  # the finished attempt is the current run's last
