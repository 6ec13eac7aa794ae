"""GET /jobs/{id}/metrics: few points for a chart, without losing the extremes, on one step axis for all keys."""

from __future__ import annotations

import math

import pytest
from server_harness import Harness


@pytest.fixture
def job_with_curves(harness: Harness) -> int:
    """2,000 steps of two keys with spikes placed where a naive stride would skip them."""
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    steps = []
    for step in range(2000):
        reward = math.sin(step / 50)
        loss = 1.0 / (step + 1)
        if step == 777:
            reward = 9.5  # global max
        if step == 1333:
            reward = -7.25  # global min
        if step == 1501:
            loss = 4.0  # loss max, at a step no reward extreme lives at
        steps.append({"step": step, "wall_time": float(step), "values": {"reward/mean": reward, "loss": loss}})
    for start in range(0, 2000, 250):
        batch = {"attempt": 1, "steps": steps[start : start + 250]}
        assert harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=token).status_code == 200
    return job_id


def _series(harness: Harness, job_id: int, keys: str, max_points: int) -> list[dict]:
    response = harness.client.get(
        f"/api/v1/jobs/{job_id}/metrics", params={"keys": keys, "max_points": max_points}, headers=harness.admin
    )
    assert response.status_code == 200, response.text
    return response.json()["series"]


def test_downsampling_keeps_global_min_max_and_last_point(harness: Harness, job_with_curves: int) -> None:
    [reward] = _series(harness, job_with_curves, "reward/mean", 60)
    assert max(reward["maximum"]) == 9.5 and min(reward["minimum"]) == -7.25
    assert reward["steps"][-1] == 1999 and reward["values"][-1] == pytest.approx(math.sin(1999 / 50))


def test_downsampled_series_respect_max_points(harness: Harness, job_with_curves: int) -> None:
    series = _series(harness, job_with_curves, "reward/mean,loss", 120)
    assert 0 < len(series[0]["steps"]) <= 120


def test_series_share_one_step_axis_with_each_keys_extremes(harness: Harness, job_with_curves: int) -> None:
    reward, loss = _series(harness, job_with_curves, "reward/mean,loss", 120)
    assert reward["steps"] == loss["steps"] == sorted(reward["steps"])
    assert max(loss["maximum"]) == 4.0 and loss["maximum"][0] == 1.0
    assert None not in loss["values"]  # both keys have every step, so every aligned slot is filled


def test_short_series_are_returned_whole(harness: Harness, job_with_curves: int) -> None:
    [loss] = _series(harness, job_with_curves, "loss", 5000)
    assert loss["steps"] == list(range(2000))


def test_key_without_points_gets_nulls_on_the_shared_axis(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    batch = {"attempt": 1, "steps": [{"step": s, "wall_time": 0.0, "values": {"loss": 1.0}} for s in (0, 5)]}
    harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=token)
    _loss, missing = _series(harness, job_id, "loss,eval/score", 100)
    assert missing["steps"] == [0, 5] and missing["values"] == missing["wall_times"] == [None, None]


def test_metric_keys_lists_every_key_once(harness: Harness, job_with_curves: int) -> None:
    response = harness.client.get(f"/api/v1/jobs/{job_with_curves}/metrics/keys", headers=harness.admin)
    assert response.json() == {"keys": ["loss", "reward/mean"]}


def test_metrics_without_keys_is_422(harness: Harness) -> None:
    response = harness.client.get(
        f"/api/v1/jobs/{harness.submit_ok()}/metrics", params={"keys": " , "}, headers=harness.admin
    )
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "keys"


def test_history_lists_every_point_with_whether_a_retry_superseded_it(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    batch = {"attempt": 1, "steps": [{"step": s, "wall_time": 0.0, "values": {"loss": 1.0}} for s in (0, 1)]}
    harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=token)
    response = harness.client.get(
        f"/api/v1/jobs/{job_id}/metrics/history", params={"key": "loss"}, headers=harness.admin
    )
    points = response.json()["points"]
    assert [(p["step"], p["attempt"], p["current"]) for p in points] == [(0, 1, True), (1, 1, True)]
