"""Trainer metric batches: per-job token, idempotent storage, size limit."""

from __future__ import annotations

from typing import Any

from server_harness import Harness
from sqlalchemy import func, select

from server.models import MetricBlock


def _batch(attempt: int = 1, steps: range = range(3), keys: tuple[str, ...] = ("loss",)) -> dict[str, Any]:
    return {
        "attempt": attempt,
        "steps": [{"step": s, "wall_time": 1000.0 + s, "values": {k: float(s) for k in keys}} for s in steps],
    }


def _stored_points(harness: Harness, job_id: int) -> int:
    with harness.session() as session:
        return session.scalar(select(func.sum(MetricBlock.n)).where(MetricBlock.job_id == job_id)) or 0


def test_batch_is_stored_and_counted(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(keys=("loss", "kl")), headers=token)
    assert response.status_code == 200 and response.json() == {"stored": 6, "skipped": 0}
    assert _stored_points(harness, job_id) == 6


def test_resent_batch_stores_nothing_twice(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(), headers=token)
    again = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(), headers=token)
    assert again.json()["stored"] == 0
    assert _stored_points(harness, job_id) == 3


def test_overlapping_batch_stores_only_the_new_points(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(steps=range(3)), headers=token)
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(steps=range(5)), headers=token)
    assert response.json()["stored"] == 2


def test_non_finite_values_are_skipped_not_fatal(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    body = b'{"attempt": 1, "steps": [{"step": 0, "wall_time": 1.0, "values": {"loss": NaN, "kl": 0.5}}]}'
    response = harness.client.post(
        f"/api/v1/ingest/{job_id}/metrics", content=body, headers={**token, "Content-Type": "application/json"}
    )
    assert response.json() == {"stored": 1, "skipped": 1}


def test_batch_over_the_point_limit_is_413(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    too_many = _batch(steps=range(harness.settings.max_metric_points + 1))
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=too_many, headers=token)
    assert response.status_code == 413
    assert _stored_points(harness, job_id) == 0


def test_token_of_another_job_is_403(harness: Harness) -> None:
    mine, other = harness.submit_ok(), harness.submit_ok()
    token = harness.start_job(mine)
    harness.start_job(other)
    response = harness.client.post(f"/api/v1/ingest/{other}/metrics", json=_batch(), headers=token)
    assert response.status_code == 403
    assert _stored_points(harness, other) == 0


def test_token_of_a_finished_job_is_401(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    harness.finish_job(job_id, "succeeded")
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(), headers=token)
    assert response.status_code == 401


def test_user_token_cannot_ingest(harness: Harness) -> None:
    job_id = harness.submit_ok()
    harness.start_job(job_id)
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(), headers=harness.admin)
    assert response.status_code == 401


def test_batch_of_a_stale_attempt_is_409(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(attempt=2), headers=token)
    assert response.status_code == 409


def test_metric_key_over_200_characters_is_422(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(keys=("k" * 201,)), headers=token)
    assert response.status_code == 422


def test_later_attempt_replaces_the_earlier_attempts_overlapping_steps(harness: Harness) -> None:
    job_id = harness.submit_ok()
    first = harness.start_job(job_id)
    harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=_batch(steps=range(6)), headers=first)
    harness.finish_job(job_id, "failed")
    second = harness.start_job(job_id)
    resumed = {"attempt": 2, "steps": [{"step": 4, "wall_time": 2000.0, "values": {"loss": 40.0}}]}
    harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=resumed, headers=second)
    series = harness.client.get(f"/api/v1/jobs/{job_id}/metrics", params={"keys": "loss"}, headers=harness.admin)
    [loss] = series.json()["series"]
    assert (loss["steps"], loss["values"]) == ([0, 1, 2, 3, 4], [0.0, 1.0, 2.0, 3.0, 40.0])
