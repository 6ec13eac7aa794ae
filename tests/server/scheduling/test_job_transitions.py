"""set_status follows the job transition table: every (from, to) pair of statuses, on a migrated database."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from itertools import product

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.db import make_engine
from server.models import JOB_TRANSITIONS, Job, JobEvent, JobStatus
from server.services.job_status import IllegalTransition, set_status

PAIRS = list(product(JobStatus, JobStatus))
Q, S, R = JobStatus.QUEUED, JobStatus.SCHEDULED, JobStatus.RUNNING
OK, FAIL, CANCEL = JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED
# The legal moves, written out: placed or cancelled from the queue; started, requeued, or ended once placed
# (scheduled → succeeded: the running mark was lost to a database outage); only a user retry leaves an end.
LEGAL = {
    (Q, S), (Q, CANCEL),
    (S, R), (S, Q), (S, OK), (S, FAIL), (S, CANCEL),
    (R, Q), (R, OK), (R, FAIL), (R, CANCEL),
    (OK, Q), (FAIL, Q), (CANCEL, Q),
}  # fmt: skip


@pytest.fixture(scope="module")
def factory(
    tmp_path_factory: pytest.TempPathFactory, migrated_templates: dict[str, str]
) -> Iterator[sessionmaker[Session]]:
    """One migrated SQLite database for the 36 pairs; each pair gets a job of its own."""
    path = tmp_path_factory.mktemp("transitions") / "sfumato.db"
    shutil.copyfile(migrated_templates["sqlite"], path)
    engine = make_engine(f"sqlite:///{path}")
    yield sessionmaker(bind=engine, expire_on_commit=False)
    engine.dispose()


def job_in(session: Session, status: JobStatus) -> Job:
    job = Job(
        name="job",
        spec={},
        status=status,
        algorithm="flow_grpo",
        executor="native",
        model_family="sd3",
        device_type="cpu",
        devices=1,
        attempt=1,
    )
    session.add(job)
    session.flush()
    return job


def test_the_transition_table_is_the_legal_moves_and_names_every_status():
    assert set(JOB_TRANSITIONS) == set(JobStatus)
    assert {(current, wanted) for current, allowed in JOB_TRANSITIONS.items() for wanted in allowed} == LEGAL


@pytest.mark.parametrize(("current", "wanted"), PAIRS, ids=[f"{a}-{b}" for a, b in PAIRS])
def test_set_status_accepts_exactly_the_legal_pairs_and_refuses_the_rest_naming_both_states(
    factory: sessionmaker[Session], current: JobStatus, wanted: JobStatus
) -> None:
    with factory.begin() as session:
        job = job_in(session, current)
        if (current, wanted) in LEGAL:
            set_status(session, job, wanted, "by the test")
            session.flush()
            event = session.scalars(select(JobEvent).where(JobEvent.job_id == job.id)).one()
            assert (job.status, event.status) == (wanted, wanted)
        else:
            with pytest.raises(IllegalTransition, match=f"cannot go from {current} to {wanted}"):
                set_status(session, job, wanted, "by the test")
            assert job.status == current
            assert session.scalars(select(JobEvent).where(JobEvent.job_id == job.id)).all() == []
