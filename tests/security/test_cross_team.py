"""Another team's token changes nothing, sees none of another team's jobs in lists, and cannot submit into another
team or write through the trainer's door. (Every route's answer to another team's ids is checked from the route
table in test_route_table_cross_team.py.)"""

from __future__ import annotations

import pytest
from security_support import TwoTeams
from server_harness import Harness
from sqlalchemy import func, select

from server.models import Artifact, AuditEvent, Job, LogLine, MetricBlock, Sample


def _snapshot(harness: Harness, job_id: int) -> tuple[object, ...]:
    with harness.session() as session:
        job = session.get_one(Job, job_id)
        counts = tuple(
            session.scalar(select(func.count()).select_from(model).where(model.job_id == job_id))
            for model in (MetricBlock, Sample, LogLine, Artifact, AuditEvent)
        )
        return (job.status, job.cancel_requested, job.attempt, job.name, *counts)


@pytest.mark.parametrize("action", ["cancel", "retry"])
def test_another_teams_cancel_and_retry_are_404_and_change_nothing(
    harness: Harness, two_teams: TwoTeams, action: str
) -> None:
    before = _snapshot(harness, two_teams.job_id)
    response = harness.client.post(f"/api/v1/jobs/{two_teams.job_id}/{action}", headers=two_teams.studio)
    assert response.status_code == 404
    assert _snapshot(harness, two_teams.job_id) == before


def test_another_teams_job_is_absent_from_lists_hosts_and_counts(harness: Harness, two_teams: TwoTeams) -> None:
    host_id = harness.add_host("cpu-1", device_type="cpu")
    other = harness.submit_ok({"name": "on-gpu"}, headers=two_teams.lab)
    harness.start_job(other, host_id=host_id)
    page = harness.client.get("/api/v1/jobs", headers=two_teams.studio).json()
    assert page["items"] == [] and page["total"] == 0
    devices = harness.client.get("/api/v1/hosts", headers=two_teams.studio).json()["items"][0]["devices"]
    assert devices[0]["busy"] and devices[0]["job_id"] is None
    lab_devices = harness.client.get("/api/v1/hosts", headers=two_teams.lab).json()["items"][0]["devices"]
    assert lab_devices[0]["job_id"] == other


def test_submitting_into_another_team_is_refused_and_stores_nothing(harness: Harness, two_teams: TwoTeams) -> None:
    count = harness.job_count()
    response = harness.submit({"name": "sneaky"}, headers=two_teams.studio, team="lab")
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "team"
    assert harness.job_count() == count


def test_a_user_token_cannot_write_through_the_ingest_door(harness: Harness, two_teams: TwoTeams) -> None:
    before = _snapshot(harness, two_teams.job_id)
    batch = {"attempt": 1, "steps": [{"step": 5, "wall_time": 2.0, "values": {"loss": 9.0}}]}
    for headers in (two_teams.studio, two_teams.lab):
        response = harness.client.post(f"/api/v1/ingest/{two_teams.job_id}/metrics", json=batch, headers=headers)
        assert response.status_code == 401
    assert _snapshot(harness, two_teams.job_id) == before
