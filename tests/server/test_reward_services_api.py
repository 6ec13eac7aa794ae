"""The reward services API: creating, reading and stopping services within a team, another team's service a
404 whose name a job cannot use, the reward server's caller check, and bad input naming its field."""

from __future__ import annotations

from typing import Any

import pytest
from server_harness import Harness, Headers
from sqlalchemy import select

from server.models import AuditEvent

BRIGHT = {"name": "bright", "reward": "brightness", "devices": 1, "device_type": "cpu"}


def create(harness: Harness, headers: Headers, **fields: Any) -> Any:
    return harness.client.post("/api/v1/services", json=BRIGHT | fields, headers=headers)


def service_spec(name: str = "bright") -> dict[str, Any]:
    return {"name": "uses-service", "reward": [{"name": "service", "service": name, "weight": 2.0}]}


def test_a_created_service_is_pending_in_its_team_and_audited(harness: Harness, lab: Headers) -> None:
    response = create(harness, lab)
    assert response.status_code == 201, response.text
    body = response.json()
    assert (body["state"], body["team"], body["reward"], body["created_by"]) == ("pending", "lab", "brightness", "lena")
    assert body["figures"]["requests"] == 0 and body["jobs"] == []
    with harness.session() as session:
        actions = session.scalars(select(AuditEvent.action)).all()
    assert "service.create" in actions


def test_another_teams_service_is_404_to_read_and_to_stop_and_absent_from_its_list(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    service_id = create(harness, lab).json()["id"]
    assert harness.client.get(f"/api/v1/services/{service_id}", headers=studio).status_code == 404
    assert harness.client.post(f"/api/v1/services/{service_id}/stop", headers=studio).status_code == 404
    assert harness.client.get("/api/v1/services", headers=studio).json()["items"] == []
    assert harness.client.get(f"/api/v1/services/{service_id}", headers=lab).json()["state"] == "pending"


def test_a_job_cannot_name_another_teams_service(harness: Harness, lab: Headers, studio: Headers) -> None:
    create(harness, lab)
    refused = harness.submit(service_spec(), headers=studio)
    assert refused.status_code == 422
    assert [e["field"] for e in refused.json()["detail"]] == ["reward.0.service"]
    assert "no live reward service named 'bright'" in refused.json()["detail"][0]["message"]
    accepted = harness.submit(service_spec(), headers=lab)
    assert accepted.status_code == 201, accepted.text


def test_a_job_naming_the_service_is_listed_as_using_it(harness: Harness, lab: Headers) -> None:
    service_id = create(harness, lab).json()["id"]
    job_id = harness.submit_ok(service_spec(), headers=lab)
    jobs = harness.client.get(f"/api/v1/services/{service_id}", headers=lab).json()["jobs"]
    assert jobs == [{"id": job_id, "name": "uses-service", "status": "queued"}]


def test_the_caller_check_admits_the_teams_user_tokens_only_and_no_job_token(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    service_id = create(harness, lab).json()["id"]
    lab_job = harness.start_job(harness.submit_ok({"name": "lab-job"}, headers=lab))
    studio_job = harness.start_job(harness.submit_ok({"name": "studio-job"}, headers=studio))
    check = f"/api/v1/services/{service_id}/caller"
    assert harness.client.get(check, headers=lab_job).status_code == 403  # jobs score with their reward token
    assert harness.client.get(check, headers=lab).status_code == 200
    assert harness.client.get(check, headers=studio_job).status_code == 403
    assert harness.client.get(check, headers=studio).status_code == 404  # as for a missing service
    assert harness.client.get(check).status_code == 401
    assert harness.client.get("/api/v1/services/999/caller", headers=lab).status_code == 404


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"reward": "vibes"}, "reward"),
        ({"reward": "service"}, "reward"),
        ({"reward": "remote"}, "reward"),
        ({"reward": "pickscore"}, "path"),
        ({"reward": "brightness", "path": "/tmp"}, "path"),
        ({"name": "Has Spaces"}, "name"),
        ({"devices": 0}, "devices"),
        ({"devices": 9}, "devices"),
        ({"team": "studio"}, "team"),
    ],
)
def test_bad_input_is_refused_naming_the_field_and_stores_nothing(
    harness: Harness, lab: Headers, fields: dict[str, Any], field: str
) -> None:
    harness.add_host("cpu-host", device_type="cpu", count=8)
    response = create(harness, lab, **fields)
    assert response.status_code == 422, response.text
    assert [e["field"] for e in response.json()["detail"]] == [field]
    assert harness.client.get("/api/v1/services", headers=lab).json()["total"] == 0


def test_a_live_name_is_taken_until_the_service_is_stopped(harness: Harness, lab: Headers) -> None:
    first = create(harness, lab).json()["id"]
    duplicate = create(harness, lab)
    assert duplicate.status_code == 422 and duplicate.json()["detail"][0]["field"] == "name"
    stopped = harness.client.post(f"/api/v1/services/{first}/stop", headers=lab)
    assert stopped.status_code == 200 and stopped.json()["state"] == "stopped"
    assert harness.client.post(f"/api/v1/services/{first}/stop", headers=lab).status_code == 409
    assert create(harness, lab).status_code == 201


def test_an_experiment_cannot_name_another_teams_service_in_any_cell(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    assert create(harness, lab).status_code == 201
    body = {"name": "exp", "spec": service_spec(), "axes": [{"path": "seed", "values": [1, 2]}]}
    refused = harness.client.post("/api/v1/experiments", json=body, headers=studio)
    assert refused.status_code == 422
    assert [e["field"] for e in refused.json()["detail"]] == ["spec.reward.0.service"]
    assert harness.client.post("/api/v1/experiments", json=body, headers=lab).status_code == 201
