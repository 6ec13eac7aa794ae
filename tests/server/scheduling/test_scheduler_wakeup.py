"""The scheduler wakes when a job is queued or ends (PostgreSQL NOTIFY at commit), and polls again when its
listening connection is lost."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from server.models import Job, JobStatus
from server.services.job_status import set_status
from server.services.scheduler_wakeup import SchedulerWakeup

pytestmark = pytest.mark.parametrize("migrated_database_url", ["postgres"], indirect=True)

AddJob = Callable[..., Job]


@pytest.fixture
def wakeup(migrated_database_url: str) -> Iterator[SchedulerWakeup]:
    wakeup = SchedulerWakeup(migrated_database_url, threading.Event())
    assert wakeup.wait(0) is False  # listening from here on, nothing pending
    yield wakeup
    wakeup.close()


def change_status(factory: sessionmaker[Session], job_id: int, status: JobStatus, commit: bool = True) -> None:
    with factory() as session:
        set_status(session, session.get_one(Job, job_id), status)
        if commit:
            session.commit()


@pytest.mark.parametrize("status", [JobStatus.QUEUED, JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED])
def test_a_job_queued_or_ended_wakes_the_waiting_scheduler(
    factory: sessionmaker[Session], add_job: AddJob, wakeup: SchedulerWakeup, status: JobStatus
) -> None:
    job = add_job(status=JobStatus.RUNNING)

    change_status(factory, job.id, status)

    assert wakeup.wait(60) is True


def test_a_job_starting_to_run_does_not_wake_the_scheduler(
    factory: sessionmaker[Session], add_job: AddJob, wakeup: SchedulerWakeup
) -> None:
    job = add_job(status=JobStatus.SCHEDULED)

    change_status(factory, job.id, JobStatus.RUNNING)

    assert wakeup.wait(0.5) is False


def test_a_change_rolled_back_does_not_wake_the_scheduler(
    factory: sessionmaker[Session], add_job: AddJob, wakeup: SchedulerWakeup
) -> None:
    job = add_job(status=JobStatus.RUNNING)

    change_status(factory, job.id, JobStatus.QUEUED, commit=False)

    assert wakeup.wait(0.5) is False


def test_the_scheduler_listens_again_after_its_connection_is_lost(
    factory: sessionmaker[Session], add_job: AddJob, wakeup: SchedulerWakeup
) -> None:
    job = add_job(status=JobStatus.RUNNING)
    listening = "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN %'"
    with factory.begin() as session:
        session.execute(text(f"SELECT pg_terminate_backend(pid) FROM ({listening}) AS l"))

    assert wakeup.wait(0.5) is False  # the lost connection: a poll
    assert wakeup.wait(0) is False  # listening again
    change_status(factory, job.id, JobStatus.QUEUED)
    assert wakeup.wait(60) is True
