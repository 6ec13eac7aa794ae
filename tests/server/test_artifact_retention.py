"""Retention per team: the last N checkpoints of each job stay in the artifact store, models always; the bytes a
team holds per kind; the setting is a team admin's, validated."""

from __future__ import annotations

import pytest
from server_harness import Harness, Headers
from sqlalchemy import select
from uploaded_artifacts import uploaded

from server.models import Team


def team_id(harness: Harness, name: str) -> int:
    with harness.session() as session:
        return int(session.scalar(select(Team.id).where(Team.name == name)))  # type: ignore[arg-type]


def storage(harness: Harness, team: int, headers: Headers):  # type: ignore[no-untyped-def]
    return harness.client.get(f"/api/v1/teams/{team}/artifact-storage", headers=headers)


def set_retention(harness: Harness, team: int, headers: Headers, keep: object):  # type: ignore[no-untyped-def]
    body = {"checkpoint_retention": keep}
    return harness.client.patch(f"/api/v1/teams/{team}/artifact-storage", json=body, headers=headers)


def downloadable(harness: Harness, job_id: int) -> list[tuple[str, bool]]:
    items = harness.client.get(f"/api/v1/jobs/{job_id}/artifacts", headers=harness.admin).json()["items"]
    return [(a["name"], a["downloadable"]) for a in items]


def test_a_team_keeps_the_last_n_checkpoints_of_a_job_and_every_model(harness: Harness, lab: Headers) -> None:
    team = team_id(harness, "lab")
    assert set_retention(harness, team, lab, 2).status_code == 200
    job_id = harness.submit_ok(headers=lab)
    token = harness.start_job(job_id)
    for step in (1, 2, 3):
        uploaded(harness, job_id, token, "checkpoint", f"step-{step}", b"c" * 100, step)
    uploaded(harness, job_id, token, "model", "model", b"m" * 1000, 3)
    assert downloadable(harness, job_id) == [("step-1", False), ("step-2", True), ("step-3", True), ("model", True)]
    held = storage(harness, team, lab).json()
    assert held["bytes_by_kind"] == {"checkpoint": 200, "model": 1000} and held["total_bytes"] == 1200
    store_files = [p for p in (harness.settings.resolved_artifact_root() / "store").rglob("*") if p.is_file()]
    assert len(store_files) == 3  # the pruned checkpoint's bytes are gone from the store


def test_lowering_the_retention_prunes_at_once_and_none_keeps_all(harness: Harness, lab: Headers) -> None:
    team = team_id(harness, "lab")
    job_id = harness.submit_ok(headers=lab)
    token = harness.start_job(job_id)
    for step in (1, 2, 3):
        uploaded(harness, job_id, token, "checkpoint", f"step-{step}", b"c" * 10, step)
    assert storage(harness, team, lab).json()["checkpoint_retention"] is None
    assert storage(harness, team, lab).json()["bytes_by_kind"] == {"checkpoint": 30}
    assert set_retention(harness, team, lab, 1).json()["bytes_by_kind"] == {"checkpoint": 10}
    assert downloadable(harness, job_id) == [("step-1", False), ("step-2", False), ("step-3", True)]


@pytest.mark.parametrize("keep", [0, -1, "two", 10_001])
def test_a_retention_that_is_not_a_positive_count_is_422_naming_the_field(
    harness: Harness, lab: Headers, keep: object
) -> None:
    refused = set_retention(harness, team_id(harness, "lab"), lab, keep)
    assert refused.status_code == 422
    assert "checkpoint_retention" in refused.text


def test_only_a_team_admin_changes_the_retention_and_another_team_gets_404(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    team = team_id(harness, "lab")
    member = harness.add_user("mia", "lab", "member")
    assert set_retention(harness, team, member, 3).status_code == 403
    assert storage(harness, team, member).status_code == 200
    assert (storage(harness, team, studio).status_code, set_retention(harness, team, studio, 3).status_code) == (
        404,
        404,
    )


def test_a_checkpoint_a_model_version_was_registered_from_is_kept_beyond_the_retention(
    harness: Harness, lab: Headers
) -> None:
    job_id = harness.submit_ok(headers=lab)
    token = harness.start_job(job_id)
    for step in (1, 2, 3):
        uploaded(harness, job_id, token, "checkpoint", f"step-{step}", b"c" * 10, step)
    registered = harness.client.post("/api/v1/models", json={"name": "early", "job_id": job_id, "step": 1}, headers=lab)
    assert registered.status_code == 201, registered.text
    assert set_retention(harness, team_id(harness, "lab"), lab, 1).status_code == 200
    assert downloadable(harness, job_id) == [("step-1", True), ("step-2", False), ("step-3", True)]


def test_a_retention_change_is_audited_with_its_old_and_new_value(harness: Harness, lab: Headers) -> None:
    team = team_id(harness, "lab")
    set_retention(harness, team, lab, 3)
    set_retention(harness, team, lab, None)
    events = harness.client.get(f"/api/v1/teams/{team}/audit", params={"action": "team.retention"}, headers=lab)
    assert [e["detail"] for e in events.json()["items"]] == [
        "checkpoint retention: last 3 -> all",
        "checkpoint retention: all -> last 3",
    ]
