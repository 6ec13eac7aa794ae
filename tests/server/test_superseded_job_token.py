"""A job token of an attempt that is over (server/services/auth.py, `_refuse_past_attempt`): its reporter is told
409 `attempt_superseded` while the job goes on without it (started again, or back in the queue), and 401 like any
unknown token otherwise (the job finished, another job's URL, a token no attempt had)."""

from __future__ import annotations

from server_harness import Harness, Headers, bearer

from server.models import Job, JobStatus
from server.services.job_attempts import record_token
from server.services.job_status import set_status
from server.services.tokens import JOB_TOKEN_PREFIX, new_token


def launch(harness: Harness, job_id: int) -> Headers:
    """The harness's start of the next attempt, with node 0's token kept in the attempt's row as a launch keeps it
    (server/services/job_runs.py)."""
    headers = harness.start_job(job_id)
    with harness.session() as session:
        job = session.get_one(Job, job_id)
        assert job.token_hash is not None
        record_token(session, job, job.token_hash)
        session.commit()
    return headers


def report(harness: Harness, job_id: int, token: Headers, attempt: int = 1) -> tuple[int, dict[str, str]]:
    body = {"attempt": attempt, "step": 1, "total_steps": 10}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/progress", json=body, headers=token)
    return response.status_code, response.json()


def superseded(job_id: int, attempt: int, now: str) -> tuple[int, dict[str, str]]:
    return 409, {"detail": f"attempt {attempt} of job {job_id} is over: {now}", "code": "attempt_superseded"}


def test_the_token_of_an_attempt_the_job_has_started_again_since_is_told_it_is_superseded(harness: Harness) -> None:
    job_id = harness.submit_ok()
    first = launch(harness, job_id)
    launch(harness, job_id)
    other = harness.submit_ok()  # a job still at its first attempt, which the statement must not join to
    launch(harness, other)
    assert report(harness, job_id, first) == superseded(job_id, 1, "the job is at attempt 2")


def test_the_token_of_an_attempt_sent_back_to_the_queue_is_told_it_is_superseded(harness: Harness) -> None:
    job_id = harness.submit_ok()
    first = launch(harness, job_id)
    with harness.session() as session:
        set_status(session, session.get_one(Job, job_id), JobStatus.QUEUED, "its node was lost")
        session.commit()
    assert report(harness, job_id, first) == superseded(job_id, 1, "the job is back in the queue")


def test_the_last_attempt_s_token_of_a_finished_job_is_refused_as_unknown(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = launch(harness, job_id)
    harness.finish_job(job_id)
    assert report(harness, job_id, token)[0] == 401


def test_a_past_attempt_s_token_sent_to_another_job_is_refused_as_unknown(harness: Harness) -> None:
    job_id = harness.submit_ok()
    first = launch(harness, job_id)
    launch(harness, job_id)
    other = harness.submit_ok()
    launch(harness, other)
    assert report(harness, other, first)[0] == 401


def test_a_token_no_attempt_had_is_refused_as_unknown_on_a_job_with_a_past_attempt(harness: Harness) -> None:
    job_id = harness.submit_ok()
    launch(harness, job_id)
    launch(harness, job_id)
    assert report(harness, job_id, bearer(new_token(JOB_TOKEN_PREFIX)))[0] == 401
