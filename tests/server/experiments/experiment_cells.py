"""Experiments for the API tests: created through POST /api/v1/experiments, their cells then run as a worker
would run them (metrics through the ingest API), so that the summary and the report have figures."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from server_harness import Harness, Headers

from server.models import Allocation, utcnow

KEYS = ("throughput/samples_per_s", "reward/mean", "memory/peak_bytes")


def create(harness: Harness, *axes: tuple[str, list[Any]]) -> dict[str, Any]:
    """An experiment of the admin's over `axes`, each cell 4 steps of the default spec."""
    body = {"name": "exp", "spec": {"name": "base", "algorithm": {"total_steps": 4}}}
    body["axes"] = [{"path": path, "values": values} for path, values in axes]
    response = harness.client.post("/api/v1/experiments", json=body, headers=harness.admin)
    assert response.status_code == 201, response.text
    return dict(response.json())


def run_cell(
    harness: Harness, job_id: int, host: int, speed: float, uploads: Callable[[Headers], None] | None = None
) -> None:
    """What a worker and the trainer do: the cell runs on `host`, sends what `uploads` sends with its job token,
    reports 4 steps of metrics, succeeds, and its devices are released."""
    token = harness.start_job(job_id, host_id=host)
    if uploads is not None:
        uploads(token)
    steps = [{"step": i, "wall_time": 1000.0 + i, "values": {key: speed * (i + 1) for key in KEYS}} for i in range(4)]
    response = harness.client.post(
        f"/api/v1/ingest/{job_id}/metrics", json={"attempt": 1, "steps": steps}, headers=token
    )
    assert response.status_code == 200, response.text
    harness.finish_job(job_id)
    with harness.session() as session:
        for allocation in session.query(Allocation).filter_by(job_id=job_id):
            allocation.released_at = utcnow()
        session.commit()
