"""Metric batches are stored by key name: steps that change their keys, and the reporter's largest batch."""

from __future__ import annotations

from typing import Any

import pytest
from server_harness import Harness

from server.config import Settings
from trainer.reporting.reporter import MAX_BATCH_STEPS

# What one real training step logs (trainer/run.py step_metrics and the executors' report): the reporter's
# largest batch carries MAX_BATCH_STEPS steps of about this many keys.
STEP_KEYS = 32


def _post(harness: Harness, job_id: int, token: dict[str, str], steps: list[dict[str, Any]]) -> dict[str, Any]:
    response = harness.client.post(
        f"/api/v1/ingest/{job_id}/metrics", json={"attempt": 1, "steps": steps}, headers=token
    )
    assert response.status_code == 200, response.text
    return response.json()


def _series(harness: Harness, job_id: int, keys: list[str]) -> dict[str, dict[int, float]]:
    """Each key's stored points as {step: value}, read back through the API."""
    params = {"keys": ",".join(keys)}
    body = harness.client.get(f"/api/v1/jobs/{job_id}/metrics", params=params, headers=harness.admin).json()
    return {
        s["key"]: {step: value for step, value in zip(s["steps"], s["values"], strict=True) if value is not None}
        for s in body["series"]
    }


def test_steps_that_swap_a_key_for_another_store_each_value_under_its_own_name(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    steps = [
        {"step": 1, "wall_time": 1.0, "values": {"loss": 1.0, "kl": 10.0}},
        {"step": 2, "wall_time": 2.0, "values": {"loss": 2.0, "eval/reward": 20.0}},
        {"step": 3, "wall_time": 3.0, "values": {"loss": 3.0, "kl": 30.0}},
    ]
    _post(harness, job_id, token, steps)
    assert _series(harness, job_id, ["loss", "kl", "eval/reward"]) == {
        "loss": {1: 1.0, 2: 2.0, 3: 3.0},
        "kl": {1: 10.0, 3: 30.0},
        "eval/reward": {2: 20.0},
    }


def test_steps_that_list_the_same_keys_in_another_order_keep_each_value_with_its_key(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    steps = [
        {"step": 1, "wall_time": 1.0, "values": {"loss": 1.0, "kl": 10.0}},
        {"step": 2, "wall_time": 2.0, "values": {"kl": 20.0, "loss": 2.0}},
    ]
    _post(harness, job_id, token, steps)
    assert _series(harness, job_id, ["loss", "kl"]) == {"loss": {1: 1.0, 2: 2.0}, "kl": {1: 10.0, 2: 20.0}}


@pytest.fixture
def settings(settings: Settings) -> Settings:
    """The server's own point limit (the shared fixture lowers it), so the reporter's largest batch is real."""
    return settings.model_copy(update={"max_metric_points": Settings.model_fields["max_metric_points"].default})


def test_the_reporter_s_largest_batch_is_stored_whole_across_blocks(harness: Harness) -> None:
    job_id = harness.submit_ok()
    token = harness.start_job(job_id)
    keys = [f"key/{k:02d}" for k in range(STEP_KEYS)]
    steps = [
        {"step": s, "wall_time": float(s), "values": {key: s + k / 100 for k, key in enumerate(keys)}}
        for s in range(1, MAX_BATCH_STEPS + 1)
    ]
    assert _post(harness, job_id, token, steps) == {"stored": MAX_BATCH_STEPS * STEP_KEYS, "skipped": 0}
    stored = _series(harness, job_id, [keys[0], keys[-1]])
    assert stored[keys[0]] == {s: float(s) for s in range(1, MAX_BATCH_STEPS + 1)}
    assert stored[keys[-1]] == {s: s + (STEP_KEYS - 1) / 100 for s in range(1, MAX_BATCH_STEPS + 1)}
