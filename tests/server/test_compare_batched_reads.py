"""The compare answer reads each figure for all its jobs at once: every job's row is the row it has when compared
alone, also for a retried job whose later attempt superseded part of the earlier one's points."""

from __future__ import annotations

from typing import Any

from server_harness import Harness

REWARD, MEMORY = "reward/mean", "memory/peak_bytes"


def _report(harness: Harness, job_id: int, token: dict[str, str], attempt: int, steps: range, base: float) -> None:
    points = [
        {"step": s, "wall_time": 1000.0 + s, "values": {REWARD: base + s / 10, MEMORY: base * 100 + s}} for s in steps
    ]
    body = {"attempt": attempt, "steps": points}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=body, headers=token)
    assert response.status_code == 200, response.text


def _rows(harness: Harness, ids: list[int]) -> list[dict[str, Any]]:
    response = harness.client.get("/api/v1/compare", params={"jobs": ",".join(map(str, ids))}, headers=harness.admin)
    assert response.status_code == 200, response.text
    return [{k: v for k, v in row.items() if k not in ("speedup", "of_bound")} for row in response.json()["jobs"]]


def test_each_row_is_the_job_s_own_row_also_for_a_retried_job(harness: Harness) -> None:
    plain = harness.submit_ok({"name": "plain"})
    _report(harness, plain, harness.start_job(plain), 1, range(0, 6), 1.0)
    harness.finish_job(plain)
    retried = harness.submit_ok({"name": "retried"})
    _report(harness, retried, harness.start_job(retried), 1, range(0, 6), 5.0)
    _report(harness, retried, harness.start_job(retried), 2, range(3, 5), 2.0)  # resumed at step 3
    harness.finish_job(retried)
    together = _rows(harness, [plain, retried])
    assert together == _rows(harness, [plain]) + _rows(harness, [retried])
    row = together[1]
    # current points: attempt 1's steps 0-2 (5.0, 5.1, 5.2; memory 500-502), attempt 2's 3-4 (2.3, 2.4; 203-204)
    assert (row["final_reward"], row["best_reward"], row["peak_memory_bytes"]) == (2.4, 5.2, 502.0)
