"""Cancel: queued stops at once, scheduled/running asks the worker, finished is a conflict. Retry re-queues."""

from __future__ import annotations

from server_harness import Harness, Response

from server.models import JobStatus


def _cancel(harness: Harness, job_id: int) -> Response:
    return harness.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=harness.admin)


def test_cancel_queued_job_cancels_at_once(harness: Harness) -> None:
    response = _cancel(harness, harness.submit_ok())
    assert response.status_code == 200
    body = response.json()
    assert body["status"] == "cancelled" and body["finished_at"] is not None
    assert body["events"][-1]["message"] == "cancelled by admin"


def test_cancel_running_job_requests_the_worker_to_stop_it(harness: Harness) -> None:
    job_id = harness.submit_ok()
    harness.start_job(job_id)
    response = _cancel(harness, job_id)
    assert response.status_code == 202
    assert (response.json()["status"], response.json()["cancel_requested"]) == ("running", True)


def test_cancel_finished_job_is_409(harness: Harness) -> None:
    job_id = harness.submit_ok()
    harness.start_job(job_id)
    harness.finish_job(job_id, JobStatus.SUCCEEDED)
    response = _cancel(harness, job_id)
    assert response.status_code == 409 and "already succeeded" in response.json()["detail"]


def test_viewer_cannot_cancel(harness: Harness) -> None:
    job_id = harness.submit_ok()
    viewer = harness.add_user("vic", "default", role="viewer")
    assert harness.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=viewer).status_code == 403


def test_read_only_token_cannot_cancel(harness: Harness) -> None:
    job_id = harness.submit_ok()
    reader = harness.add_user("rita", "default", scope="read")
    response = harness.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=reader)
    assert response.status_code == 403 and response.json()["detail"] == "this token is read-only"


def test_retry_finished_job_queues_it_again(harness: Harness) -> None:
    job_id = harness.submit_ok()
    harness.start_job(job_id)
    harness.finish_job(job_id, "failed")
    response = harness.client.post(f"/api/v1/jobs/{job_id}/retry", headers=harness.admin)
    assert response.status_code == 200
    body = response.json()
    assert (body["status"], body["finished_at"], body["error"]) == ("queued", None, None)
    assert [e["status"] for e in body["events"]][-2:] == ["failed", "queued"]


def test_retry_active_job_is_409(harness: Harness) -> None:
    response = harness.client.post(f"/api/v1/jobs/{harness.submit_ok()}/retry", headers=harness.admin)
    assert response.status_code == 409
