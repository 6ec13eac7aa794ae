"""Progress reports update the job's live fields; artifacts must lie inside the job's folder."""

from __future__ import annotations

import pytest
from server_harness import Harness, Headers


@pytest.fixture
def running(harness: Harness) -> tuple[int, Headers]:
    job_id = harness.submit_ok()
    return job_id, harness.start_job(job_id)


def test_progress_updates_step_and_reward(harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    body = {"attempt": 1, "step": 3, "total_steps": 10, "reward": 0.41, "samples_per_s": 3.2}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/progress", json=body, headers=token)
    assert response.status_code == 200 and response.json() == {"cancel_requested": False}
    job = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()
    assert (job["step"], job["total_steps"], job["last_reward"]) == (3, 10, 0.41)
    assert job["last_progress_at"] is not None


def test_progress_reply_tells_the_trainer_a_cancel_was_requested(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    harness.client.post(f"/api/v1/jobs/{job_id}/cancel", headers=harness.admin)
    body = {"attempt": 1, "step": 1, "total_steps": 10}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/progress", json=body, headers=token)
    assert response.json() == {"cancel_requested": True}


def test_progress_of_an_earlier_attempt_is_refused_as_superseded_with_a_code_the_reporter_acts_on(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, _ = running
    token = harness.start_job(job_id)  # the platform started the job again: attempt 2
    body = {"attempt": 1, "step": 4, "total_steps": 10}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/progress", json=body, headers=token)
    assert (response.status_code, response.json()) == (
        409,
        {"detail": f"attempt 1 of job {job_id} is over: the job is at attempt 2", "code": "attempt_superseded"},
    )


def test_artifact_inside_the_job_folder_is_registered_with_its_size(
    harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    checkpoint = harness.settings.resolved_artifact_root() / "jobs" / str(job_id) / "checkpoints" / "step-5"
    checkpoint.mkdir(parents=True)
    (checkpoint / "weights.bin").write_bytes(b"\x00" * 1234)
    body = {"attempt": 1, "kind": "checkpoint", "name": "step-5", "step": 5, "path": "checkpoints/step-5"}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=body, headers=token)
    assert response.status_code == 201
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/artifacts", headers=harness.admin).json()["items"]
    assert (listed["path"], listed["size_bytes"], listed["step"]) == ("checkpoints/step-5", 1234, 5)


@pytest.mark.parametrize("path", ["../../etc", "/etc/passwd", "checkpoints/../../other"])
def test_artifact_path_escaping_the_job_folder_is_422(
    harness: Harness, running: tuple[int, Headers], path: str
) -> None:
    job_id, token = running
    body = {"attempt": 1, "kind": "model", "name": "evil", "path": path}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=body, headers=token)
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "path"
    assert harness.client.get(f"/api/v1/jobs/{job_id}/artifacts", headers=harness.admin).json()["items"] == []
