"""Listing and reading jobs, and team scoping: another team's job is a 404, never a 403."""

from __future__ import annotations

import pytest
from server_harness import Harness
from sqlalchemy import delete, select, update

from server.models import Job, Membership, User


def test_list_filters_by_status_executor_algorithm_and_name(harness: Harness) -> None:
    first = harness.submit_ok({"name": "alpha-run"})
    harness.submit_ok({"name": "beta-run"})
    harness.finish_job(first, "cancelled")
    page = harness.client.get(
        "/api/v1/jobs",
        headers=harness.admin,
        params={"status": "queued,cancelled", "executor": "native", "algorithm": "flow_grpo", "name": "ALPHA"},
    ).json()
    assert [j["id"] for j in page["items"]] == [first] and page["total"] == 1


def test_list_is_newest_first_and_paginated_with_total(harness: Harness) -> None:
    ids = [harness.submit_ok({"name": f"job-{i}"}) for i in range(5)]
    page = harness.client.get("/api/v1/jobs", headers=harness.admin, params={"limit": 2, "offset": 1}).json()
    assert [j["id"] for j in page["items"]] == [ids[3], ids[2]]
    assert (page["total"], page["limit"], page["offset"]) == (5, 2, 1)


def test_name_filter_treats_percent_literally(harness: Harness) -> None:
    harness.submit_ok({"name": "plain"})
    page = harness.client.get("/api/v1/jobs", headers=harness.admin, params={"name": "%"}).json()
    assert page["total"] == 0


def test_a_page_past_the_end_is_empty_and_still_counts_every_match(harness: Harness) -> None:
    for i in range(3):
        harness.submit_ok({"name": f"job-{i}"})
    page = harness.client.get("/api/v1/jobs", headers=harness.admin, params={"offset": 5}).json()
    assert (page["items"], page["total"]) == ([], 3)


def test_name_filter_treats_underscore_and_slash_literally(harness: Harness) -> None:
    harness.submit_ok({"name": "a_b/c"})
    harness.submit_ok({"name": "axb/c"})
    names = [
        j["name"]
        for j in harness.client.get("/api/v1/jobs", headers=harness.admin, params={"name": "A_B/"}).json()["items"]
    ]
    assert names == ["a_b/c"]


def test_unknown_status_filter_is_422(harness: Harness) -> None:
    response = harness.client.get("/api/v1/jobs", headers=harness.admin, params={"status": "done"})
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "status"


def test_detail_shows_progress_events_and_allocations(harness: Harness) -> None:
    host = harness.add_host("cpu-box", "cpu", count=2)
    job_id = harness.submit_ok({"resources": {"devices": 1}})
    harness.start_job(job_id, host_id=host)
    detail = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()
    assert detail["status"] == "running" and detail["attempt"] == 1
    assert [e["status"] for e in detail["events"]] == ["queued", "scheduled", "running"]
    assert [(a["host"], a["device_index"]) for a in detail["allocations"]] == [("cpu-box", 0)]
    assert detail["created_at"].endswith("Z") and detail["started_at"] is not None


@pytest.fixture
def other_team_job(harness: Harness) -> int:
    """A job of team `vision`, which the admin-free user `dan` of team `audio` must not see."""
    vision = harness.add_user("vera", "vision")
    return harness.submit_ok({"name": "secret"}, vision)


@pytest.mark.parametrize(
    "path", ["", "/metrics?keys=loss", "/metrics/keys", "/samples", "/logs", "/artifacts", "/samples/1/image"]
)
def test_other_teams_job_reads_are_404(harness: Harness, other_team_job: int, path: str) -> None:
    outsider = harness.add_user("dan", "audio")
    response = harness.client.get(f"/api/v1/jobs/{other_team_job}{path}", headers=outsider)
    assert response.status_code == 404 and response.json()["detail"] == f"job {other_team_job} not found"


def test_other_teams_job_cancel_is_404_and_changes_nothing(harness: Harness, other_team_job: int) -> None:
    outsider = harness.add_user("dan", "audio")
    assert harness.client.post(f"/api/v1/jobs/{other_team_job}/cancel", headers=outsider).status_code == 404
    assert harness.client.get(f"/api/v1/jobs/{other_team_job}", headers=harness.admin).json()["status"] == "queued"


def test_other_teams_jobs_are_not_listed(harness: Harness, other_team_job: int) -> None:
    outsider = harness.add_user("dan", "audio")
    assert harness.client.get("/api/v1/jobs", headers=outsider).json()["total"] == 0


def test_a_user_removed_from_their_team_no_longer_sees_the_jobs_they_submitted(
    harness: Harness, other_team_job: int
) -> None:
    ana = harness.add_user("ana", "audio")
    mine = harness.submit_ok({"name": "mine"}, ana)
    with harness.session() as session:
        session.execute(
            delete(Membership).where(
                Membership.user_id == select(User.id).where(User.username == "ana").scalar_subquery()
            )
        )
        session.commit()
    assert harness.client.get("/api/v1/jobs", headers=ana).json()["items"] == []
    assert harness.client.get(f"/api/v1/jobs/{mine}", headers=ana).status_code == 404


def test_the_owner_still_sees_a_job_whose_team_is_gone(harness: Harness, other_team_job: int) -> None:
    ana = harness.add_user("ana", "audio")
    mine = harness.submit_ok({"name": "mine"}, ana)
    with harness.session() as session:
        session.execute(update(Job).where(Job.id == mine).values(team_id=None))
        session.commit()
    assert [j["id"] for j in harness.client.get("/api/v1/jobs", headers=ana).json()["items"]] == [mine]
    assert harness.client.get(f"/api/v1/jobs/{mine}", headers=ana).status_code == 200
    assert harness.client.get(f"/api/v1/jobs/{other_team_job}", headers=ana).status_code == 404


def test_team_members_see_each_others_jobs(harness: Harness, other_team_job: int) -> None:
    colleague = harness.add_user("vik", "vision", role="viewer")
    assert harness.client.get(f"/api/v1/jobs/{other_team_job}", headers=colleague).status_code == 200


def test_server_admin_sees_every_team(harness: Harness, other_team_job: int) -> None:
    assert harness.client.get(f"/api/v1/jobs/{other_team_job}", headers=harness.admin).status_code == 200


def test_spec_schema_is_the_job_spec_json_schema(harness: Harness) -> None:
    schema = harness.client.get("/api/v1/spec/schema", headers=harness.admin).json()
    assert schema["title"] == "JobSpec" and "algorithm" in schema["properties"]


def test_hosts_show_devices_and_the_visible_holder(harness: Harness) -> None:
    host = harness.add_host("gpu-a", "cuda", count=2)
    job_id = harness.submit_ok({"resources": {"device_type": "cuda", "devices": 1}})
    harness.start_job(job_id, host_id=host)
    [listed] = harness.client.get("/api/v1/hosts", headers=harness.admin).json()["items"]
    assert [(d["index"], d["busy"], d["job_id"]) for d in listed["devices"]] == [(0, True, job_id), (1, False, None)]


def test_hosts_hide_which_job_of_another_team_holds_a_device(harness: Harness) -> None:
    host = harness.add_host("gpu-a", "cuda", count=1)
    harness.start_job(harness.submit_ok({"resources": {"device_type": "cuda"}}), host_id=host)
    outsider = harness.add_user("dan", "audio")
    [listed] = harness.client.get("/api/v1/hosts", headers=outsider).json()["items"]
    assert (listed["devices"][0]["busy"], listed["devices"][0]["job_id"]) == (True, None)


def test_logs_are_read_forward_from_an_offset(harness: Harness) -> None:
    job_id = harness.submit_ok()
    harness.add_log_lines(job_id, ["one", "two", "three"])
    first = harness.client.get(f"/api/v1/jobs/{job_id}/logs", headers=harness.admin, params={"limit": 2}).json()
    assert [line["text"] for line in first["lines"]] == ["one", "two"]
    rest = harness.client.get(
        f"/api/v1/jobs/{job_id}/logs", headers=harness.admin, params={"offset": first["next_offset"]}
    ).json()
    assert [line["text"] for line in rest["lines"]] == ["three"]
    again = harness.client.get(
        f"/api/v1/jobs/{job_id}/logs", headers=harness.admin, params={"offset": rest["next_offset"]}
    ).json()
    assert again == {"lines": [], "next_offset": rest["next_offset"]}
