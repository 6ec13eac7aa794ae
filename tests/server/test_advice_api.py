"""POST /api/v1/advise, the probe report through the ingest door, GET /api/v1/advice/{id} and submitting from
the answer: a probe job queued on the host class, the answer per executor, and every bad input named."""

from __future__ import annotations

import re
from typing import Any

import pytest
from server_harness import Harness, Headers
from sqlalchemy import select

from server.models import Allocation, Device, Host, Job
from tests.spec.advice_fixture import GIB, REPORT, SPEC_DATA

TIMES = "\N{MULTIPLICATION SIGN}"


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    return migrated_sqlite_url


def advise(harness: Harness, **body: Any) -> Any:
    return harness.client.post("/api/v1/advise", json={"spec": SPEC_DATA, **body}, headers=harness.admin)


def answered(harness: Harness, budget: str | None = "16GiB") -> dict[str, Any]:
    """An advice whose probe job reported the hand-computed report (as `python -m trainer probe` sends it)."""
    harness.add_host("cpu-box", device_type="cpu", count=2)
    created = advise(harness, memory_budget=budget)
    assert created.status_code == 202, created.text
    token = harness.start_job(created.json()["probe_job_id"])
    body = REPORT.model_dump(mode="json")
    sent = harness.client.post(f"/api/v1/ingest/{created.json()['probe_job_id']}/probe", json=body, headers=token)
    assert sent.status_code == 204, sent.text
    return harness.client.get(f"/api/v1/advice/{created.json()['id']}", headers=harness.admin).json()


def test_advise_queues_a_probe_job_on_the_host_class_and_answers_probing(harness: Harness) -> None:
    harness.add_host("cpu-box", device_type="cpu")
    response = advise(harness, memory_budget="40GiB")
    assert response.status_code == 202, response.text
    body = response.json()
    assert (body["state"], body["host_class"], body["budget_bytes"], body["answer"]) == (
        "probing",
        "cpu",
        40 * GIB,
        None,
    )
    with harness.session() as session:
        job = session.get_one(Job, body["probe_job_id"])
        assert (job.kind, job.advice_id, job.status) == ("probe", body["id"], "queued")


def test_the_answer_has_one_row_per_executor_and_marks_the_recommended_one(harness: Harness) -> None:
    body = answered(harness)
    rows = {row["executor"]: row for row in body["answer"]["executors"]}
    assert body["state"] == "answered" and body["answer"]["recommended"] == "native"
    assert rows["native"]["recommended"] and rows["native"]["fits_budget"]
    assert rows["lean_retain"]["reason"] == f"lean_retain 2.61{TIMES} [2.03, 3.34] but 20.0 GiB > 16.0 GiB budget"


def test_the_answer_gives_each_prediction_its_interval_over_the_probes_rounds(harness: Harness) -> None:
    answer = answered(harness, budget=None)["answer"]
    retain = next(row for row in answer["executors"] if row["executor"] == "lean_retain")
    assert answer["rounds"] == 3 and len(retain["round_speedups"]) == 3
    interval = retain["speedup_interval"]
    assert (interval["low"], interval["high"]) == pytest.approx((2.032, 3.342), abs=1e-3)
    low, high = retain["samples_per_s_interval"]["low"], retain["samples_per_s_interval"]["high"]
    assert low < retain["samples_per_s"] < high
    assert answer["recommended"] == "lean_retain"
    assert answer["why"] == "lean_retain's speedup interval [2.03, 3.34] clears native's [1.00, 1.00]"


def test_a_budget_below_every_prediction_is_a_200_naming_the_smallest_requirement(harness: Harness) -> None:
    body = answered(harness, budget="1GiB")
    assert body["answer"]["fits"] is False
    assert body["answer"]["summary"] == "no executor fits 1.0 GiB; the smallest requirement is native at 12.0 GiB"


def test_an_executor_whose_probe_failed_is_reported_while_the_others_answer(harness: Harness) -> None:
    rows = {row["executor"]: row for row in answered(harness)["answer"]["executors"]}
    assert rows["jagg"]["error"] == "probe failed at K=4, 1 prompt(s): out of memory"
    assert rows["native"]["samples_per_s"] == pytest.approx(8 / 129)


def test_a_job_submitted_from_the_advice_carries_the_chosen_executor(harness: Harness) -> None:
    advice = answered(harness, budget="24GiB")
    response = harness.client.post(
        f"/api/v1/advice/{advice['id']}/submit", json={"executor": "lean_retain"}, headers=harness.admin
    )
    assert response.status_code == 201, response.text
    assert (response.json()["executor"], response.json()["spec"]["executor"]["name"]) == ("lean_retain", "lean_retain")
    assert response.json()["spec"]["resources"]["exclusive"] is True
    again = harness.client.get(f"/api/v1/advice/{advice['id']}", headers=harness.admin).json()
    assert [(c["job_id"], c["executor"]) for c in again["submitted"]] == [(response.json()["id"], "lean_retain")]
    assert again["submitted"][0]["predicted_samples_per_s"] == pytest.approx(8 / 49.5)


def test_submitting_an_executor_without_a_prediction_is_422_naming_executor(harness: Harness) -> None:
    advice = answered(harness)
    response = harness.client.post(
        f"/api/v1/advice/{advice['id']}/submit", json={"executor": "jagg"}, headers=harness.admin
    )
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "executor"


def test_submitting_an_executor_predicted_over_the_budget_is_422_with_the_estimate(harness: Harness) -> None:
    advice = answered(harness)  # a 16 GiB budget; lean_retain's retained graphs bring it to 20 GiB
    response = harness.client.post(
        f"/api/v1/advice/{advice['id']}/submit", json={"executor": "lean_retain"}, headers=harness.admin
    )
    assert response.status_code == 422
    assert response.json()["detail"][0] == {
        "field": "executor",
        "message": "lean_retain is predicted to peak at 20.0 GiB, over this advice's 16.0 GiB memory budget; "
        "executors that fit: native",
    }
    with harness.session() as session:
        assert session.scalars(select(Job).where(Job.advice_id == advice["id"], Job.kind == "train")).all() == []


def test_an_invalid_spec_is_422_as_for_submit(harness: Harness) -> None:
    harness.add_host("cpu-box", device_type="cpu")
    response = harness.client.post(
        "/api/v1/advise", json={"spec": {"algorithm": {"group_size": 1}}}, headers=harness.admin
    )
    assert response.status_code == 422
    assert "algorithm.group_size" in [e["field"] for e in response.json()["detail"]]


def test_a_budget_that_is_not_a_size_is_422_naming_memory_budget(harness: Harness) -> None:
    harness.add_host("cpu-box", device_type="cpu")
    response = advise(harness, memory_budget="lots")
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "memory_budget"


def test_no_online_host_of_the_class_is_409_naming_it_and_stores_nothing(harness: Harness) -> None:
    harness.add_host("cpu-box", device_type="cpu")
    response = advise(harness, host_class="cuda")
    assert response.status_code == 409
    assert "'cuda'" in response.json()["detail"]
    assert harness.job_count() == 0


def test_a_probe_report_for_a_training_job_is_409(harness: Harness) -> None:
    job_id = harness.submit_ok(SPEC_DATA)
    token = harness.start_job(job_id)
    response = harness.client.post(f"/api/v1/ingest/{job_id}/probe", json=REPORT.model_dump(mode="json"), headers=token)
    assert response.status_code == 409


def _answered_in(harness: Harness, headers: Headers, team: str) -> int:
    """An answered advice asked by `headers` for `team`."""
    harness.add_host("cpu-box", device_type="cpu", count=2)
    created = harness.client.post("/api/v1/advise", json={"spec": SPEC_DATA}, headers=headers, params={"team": team})
    assert created.status_code == 202, created.text
    token = harness.start_job(created.json()["probe_job_id"])
    body = REPORT.model_dump(mode="json")
    sent = harness.client.post(f"/api/v1/ingest/{created.json()['probe_job_id']}/probe", json=body, headers=token)
    assert sent.status_code == 204, sent.text
    return int(created.json()["id"])


def _submit_from(harness: Harness, advice_id: int, headers: Headers, **params: str) -> Any:
    url = f"/api/v1/advice/{advice_id}/submit"
    return harness.client.post(url, json={"executor": "native"}, headers=headers, params=params)


def test_a_job_from_an_advice_is_never_submitted_into_another_team(harness: Harness) -> None:
    both = harness.add_user("lena", "lab")
    harness.add_user("sam", "studio")
    harness.join("lena", "studio")
    advice_id = _answered_in(harness, both, "lab")
    refused = _submit_from(harness, advice_id, both, team="studio")
    assert refused.status_code == 422 and refused.json()["detail"][0]["field"] == "team"
    assert harness.job_count() == 1  # the probe


def test_a_job_from_an_advice_goes_to_the_advice_s_team_when_no_team_is_named(harness: Harness) -> None:
    both = harness.add_user("lena", "lab")
    harness.add_user("sam", "studio")
    harness.join("lena", "studio")
    advice_id = _answered_in(harness, both, "lab")
    response = _submit_from(harness, advice_id, both)
    assert response.status_code == 201, response.text
    assert response.json()["team"] == "lab"


def test_the_submitted_list_names_only_the_jobs_the_reader_may_see(harness: Harness) -> None:
    both = harness.add_user("lena", "lab")
    studio = harness.add_user("sam", "studio")
    lab_viewer = harness.add_user("vic", "lab", "viewer")
    harness.join("lena", "studio")
    advice_id = _answered_in(harness, both, "lab")
    seen = _submit_from(harness, advice_id, both).json()["id"]
    hidden = harness.submit_ok({**SPEC_DATA, "name": "studio's own"}, studio)
    with harness.session() as session:  # a studio job linked to lab's advice, as the old server let one be made
        session.get_one(Job, hidden).advice_id = advice_id
        session.commit()
    answer = harness.client.get(f"/api/v1/advice/{advice_id}", headers=lab_viewer).json()
    assert [check["job_id"] for check in answer["submitted"]] == [seen]


def test_a_job_page_whose_advice_the_reader_cannot_see_opens_without_the_prediction(harness: Harness) -> None:
    both = harness.add_user("lena", "lab")
    studio_viewer = harness.add_user("vic", "studio", "viewer")
    harness.join("lena", "studio")
    advice_id = _answered_in(harness, both, "lab")
    studio_job = harness.submit({**SPEC_DATA, "name": "studio's own"}, both, team="studio").json()["id"]
    with harness.session() as session:  # linked to lab's advice, as the old server let a job be
        session.get_one(Job, studio_job).advice_id = advice_id
        session.commit()
    login = harness.client.get("/login").text
    csrf = re.search(r'name="csrf-token" content="([^"]+)"', login)
    assert csrf is not None
    token = studio_viewer["Authorization"].removeprefix("Bearer ")
    form = {"token": token, "csrf_token": csrf.group(1)}
    assert harness.client.post("/login", data=form, follow_redirects=False).status_code == 303
    assert harness.client.get(f"/jobs/{studio_job}").status_code == 200


def _submitted_beside(harness: Harness, other_runs_there: bool) -> tuple[int, dict[str, Any]]:
    """A job submitted from an answered advice, started on the probe's host; another job holds a device there while
    it runs when ``other_runs_there``. Returns the job's id and GET /api/v1/jobs/{id}/prediction."""
    advice = answered(harness)
    with harness.session() as session:
        host_id = session.scalars(select(Host.id).where(Host.name == "cpu-box")).one()
    job_id = harness.client.post(
        f"/api/v1/advice/{advice['id']}/submit", json={"executor": "native"}, headers=harness.admin
    ).json()["id"]
    harness.start_job(job_id, host_id=host_id)  # on the host's first device
    if other_runs_there:
        neighbour = harness.submit_ok({**SPEC_DATA, "name": "neighbour"})
        harness.start_job(neighbour)
        with harness.session() as session:  # on its second
            second = session.scalars(select(Device.id).where(Device.host_id == host_id, Device.index == 1)).one()
            session.add(Allocation(job_id=neighbour, attempt=1, device_id=second, host_id=host_id))
            session.commit()
    response = harness.client.get(f"/api/v1/jobs/{job_id}/prediction", headers=harness.admin)
    assert response.status_code == 200, response.text
    return job_id, response.json()


def test_a_job_from_an_advice_that_ran_beside_another_job_carries_the_shared_warning(harness: Harness) -> None:
    job_id, prediction = _submitted_beside(harness, other_runs_there=True)
    assert (prediction["job_id"], prediction["executor"]) == (job_id, "native")
    assert prediction["shared_warning"] == (
        "the job ran while 1 other job(s) held devices on cpu-box: its samples/s is not native's alone"
    )
    advice = harness.client.get(f"/api/v1/advice/{prediction['advice_id']}", headers=harness.admin).json()
    assert advice["submitted"][0]["shared_warning"] == prediction["shared_warning"]


def test_a_job_from_an_advice_that_ran_alone_has_no_shared_warning(harness: Harness) -> None:
    _, prediction = _submitted_beside(harness, other_runs_there=False)
    assert prediction["shared_warning"] is None and prediction["predicted_samples_per_s"] == pytest.approx(8 / 129)


def test_a_job_not_submitted_from_an_advice_has_a_null_prediction(harness: Harness) -> None:
    job_id = harness.submit_ok(SPEC_DATA)
    response = harness.client.get(f"/api/v1/jobs/{job_id}/prediction", headers=harness.admin)
    assert response.status_code == 200 and response.json() is None
