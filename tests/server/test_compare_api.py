"""GET /api/v1/compare: one definition per figure, and the jobs list showing the same samples/s."""

from __future__ import annotations

import itertools
from datetime import timedelta
from typing import Any

from server_harness import Harness
from sqlalchemy import select

from server.models import Allocation, Device, Job, JobAttempt

THROUGHPUT = "throughput/samples_per_s"


def _report(harness: Harness, job_id: int, token: dict[str, str], series: dict[str, list[float]]) -> None:
    steps = [
        {"step": step, "wall_time": 1000.0 + step, "values": {key: values[step] for key, values in series.items()}}
        for step in range(len(next(iter(series.values()))))
    ]
    body = {"attempt": 1, "steps": steps}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=body, headers=token)
    assert response.status_code == 200, response.text


def _job(harness: Harness, executor: str, series: dict[str, list[float]], host_id: int | None = None) -> int:
    job_id = harness.submit_ok({"name": executor, "executor": {"name": executor}})
    token = harness.start_job(job_id, host_id=host_id)
    _report(harness, job_id, token, series)
    return job_id


def _compare(harness: Harness, ids: list[int], headers: dict[str, str] | None = None) -> Any:
    return harness.client.get(
        "/api/v1/compare", params={"jobs": ",".join(map(str, ids))}, headers=headers or harness.admin
    )


def test_samples_per_s_is_the_median_after_the_warmup_step_and_speedup_is_over_the_native_job(
    harness: Harness,
) -> None:
    native = _job(harness, "native", {THROUGHPUT: [100.0, 10.0, 12.0, 11.0, 50.0]})
    lean = _job(harness, "lean_retain", {THROUGHPUT: [1.0, 20.0, 22.0, 24.0]})
    body = _compare(harness, [lean, native]).json()
    rows = {row["id"]: row for row in body["jobs"]}
    assert [row["id"] for row in body["jobs"]] == [lean, native]
    assert body["definitions"]["warmup_steps"] == 1
    assert (rows[native]["samples_per_s"], rows[lean]["samples_per_s"]) == (11.5, 22.0)
    assert body["native_job_id"] == native
    assert rows[lean]["speedup"] == 22.0 / 11.5 and rows[native]["speedup"] == 1.0
    assert rows[lean]["of_bound"] == rows[lean]["speedup"] / rows[lean]["bound"]


def test_without_a_native_job_there_is_no_speedup(harness: Harness) -> None:
    lean = _job(harness, "lean_retain", {THROUGHPUT: [1.0, 20.0]})
    jagg = _job(harness, "jagg", {THROUGHPUT: [1.0, 30.0]})
    body = _compare(harness, [lean, jagg]).json()
    assert body["native_job_id"] is None
    assert [row["speedup"] for row in body["jobs"]] == [None, None]
    assert [row["samples_per_s"] for row in body["jobs"]] == [20.0, 30.0]


def test_the_jobs_list_and_a_job_show_the_samples_per_s_of_the_compare_answer(harness: Harness) -> None:
    job_id = _job(harness, "native", {THROUGHPUT: [100.0, 10.0, 12.0, 11.0, 50.0]})
    compared = _compare(harness, [job_id]).json()["jobs"][0]["samples_per_s"]
    listed = harness.client.get("/api/v1/jobs", headers=harness.admin).json()["items"][0]
    shown = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()
    assert compared == listed["samples_per_s"] == shown["samples_per_s"] == 11.5


def test_peak_memory_rewards_and_the_differing_spec_fields(harness: Harness) -> None:
    series = {"reward/mean": [0.1, 0.5, 0.3], "memory/peak_bytes": [5.0, 9.0, 7.0], THROUGHPUT: [1.0, 2.0, 2.0]}
    native = _job(harness, "native", series)
    lean = _job(harness, "lean_retain", series)
    body = _compare(harness, [native, lean]).json()
    row = body["jobs"][0]
    assert (row["peak_memory_bytes"], row["final_reward"], row["best_reward"]) == (9.0, 0.3, 0.5)
    differences = {d["field"]: d["values"] for d in body["differences"]}
    assert differences["executor.name"] == ["native", "lean_retain"]
    assert "name" not in differences


def test_duration_is_the_time_the_job_s_trainer_was_seen_running(harness: Harness) -> None:
    job_id = _job(harness, "native", {THROUGHPUT: [1.0, 2.0]})
    with harness.session() as session:  # the worker last saw its trainer 27 s after it started
        attempt = session.scalars(select(JobAttempt).where(JobAttempt.job_id == job_id)).one()
        attempt.last_seen_at = attempt.started_at + timedelta(seconds=27)
        session.commit()
    harness.finish_job(job_id)
    assert _compare(harness, [job_id]).json()["jobs"][0]["duration_s"] == 27.0


def test_jobs_that_held_devices_on_one_host_at_once_name_each_other(harness: Harness) -> None:
    shared_host = harness.add_host("gpu-a", device_type="cpu", count=4)
    other_host = harness.add_host("gpu-b", device_type="cpu", count=4)
    first = _job(harness, "native", {THROUGHPUT: [1.0, 2.0]}, host_id=shared_host)
    second = harness.submit_ok({"name": "beside", "executor": {"name": "lean_retain"}})
    with harness.session() as session:  # the second takes a device of the same host the first left free
        held = select(Allocation.device_id).where(Allocation.job_id == first)
        free = session.scalars(select(Device).where(Device.host_id == shared_host, Device.id.not_in(held))).first()
        assert free is not None
        session.add(Allocation(job_id=second, attempt=1, device_id=free.id, host_id=shared_host))
        session.commit()
    alone = _job(harness, "lean_retain", {THROUGHPUT: [1.0, 2.0]}, host_id=other_host)
    rows = {row["id"]: row for row in _compare(harness, [first, second, alone]).json()["jobs"]}
    assert rows[first]["shared_with"] == [{"job_id": second, "name": "beside", "host": "gpu-a"}]
    assert [s["job_id"] for s in rows[second]["shared_with"]] == [first]
    assert rows[alone]["shared_with"] == []


def test_a_job_without_metrics_has_its_row_with_empty_figures(harness: Harness) -> None:
    job_id = harness.submit_ok()
    row = _compare(harness, [job_id]).json()["jobs"][0]
    assert row["id"] == job_id
    assert [row[f] for f in ("samples_per_s", "speedup", "peak_memory_bytes", "final_reward", "duration_s")] == [
        None
    ] * 5


def test_an_unknown_or_invisible_job_is_404_like_a_missing_job(harness: Harness) -> None:
    mine = harness.submit_ok()
    stranger = harness.add_user("eve", "other-team")
    single = harness.client.get("/api/v1/jobs/999999", headers=harness.admin)
    unknown = _compare(harness, [mine, 999999])
    invisible = _compare(harness, [mine], headers=stranger)
    assert single.status_code == unknown.status_code == invisible.status_code == 404
    assert unknown.json() == single.json()
    assert invisible.json() == {"detail": f"job {mine} not found"}


def test_more_than_sixteen_jobs_is_refused_naming_the_field(harness: Harness) -> None:
    response = _compare(harness, list(range(1, 18)))
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == "jobs"
    assert "at most 16" in response.json()["detail"][0]["message"]


def test_samples_per_s_follows_new_steps_of_a_running_job(harness: Harness) -> None:
    job_id = harness.submit_ok({"name": "growing", "executor": {"name": "native"}})
    token = harness.start_job(job_id)
    _report(harness, job_id, token, {THROUGHPUT: [9.0, 1.0, 1.0]})
    assert _compare(harness, [job_id]).json()["jobs"][0]["samples_per_s"] == 1.0
    later = {"attempt": 1, "seq": 2, "steps": [{"step": s, "wall_time": 2000.0 + s, "values": {THROUGHPUT: 5.0}}
                                               for s in range(3, 8)]}  # fmt: skip
    assert harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=later, headers=token).status_code == 200
    assert _compare(harness, [job_id]).json()["jobs"][0]["samples_per_s"] == 5.0


def _timed_job(harness: Harness, executor: str, speed: float, started_minute: int, **spec: Any) -> int:
    """A job of `executor` (with `spec` fields besides) whose samples/s is `speed`, started `started_minute`
    minutes into its day."""
    job_id = harness.submit_ok({"name": executor, "executor": {"name": executor}, **spec})
    _report(harness, job_id, harness.start_job(job_id), {THROUGHPUT: [1.0, speed]})
    with harness.session() as session:
        job = session.get_one(Job, job_id)
        job.started_at = job.created_at.replace(hour=0, minute=started_minute, second=0, microsecond=0)
        session.commit()
    return job_id


def test_the_reference_is_the_same_native_job_whatever_the_order_of_the_ids(harness: Harness) -> None:
    other_spec = _timed_job(harness, "native", 5.0, 30, seed=7)  # differs from jagg's spec beyond the executor
    far = _timed_job(harness, "native", 10.0, 1)
    near = _timed_job(harness, "native", 8.0, 40)
    jagg = _timed_job(harness, "jagg", 12.0, 45)
    answers = [_compare(harness, ids).json() for ids in itertools.permutations([other_spec, far, near, jagg])]
    speedups = {tuple(sorted((row["id"], row["speedup"]) for row in answer["jobs"])) for answer in answers}
    assert {answer["native_job_id"] for answer in answers} == {near}
    assert len(speedups) == 1 and dict(next(iter(speedups)))[jagg] == 12.0 / 8.0
    assert answers[0]["reference"] == f"speedup over #{near}"
    assert "same spec apart from the executor, nearest in time" in answers[0]["reference_reason"]


def test_without_a_native_job_of_the_same_spec_the_reference_is_the_lowest_native_id(harness: Harness) -> None:
    first = _timed_job(harness, "native", 10.0, 50, seed=7)
    second = _timed_job(harness, "native", 20.0, 1, seed=8)
    jagg = _timed_job(harness, "jagg", 30.0, 2)
    body = _compare(harness, [jagg, second, first]).json()
    assert (body["native_job_id"], body["reference"]) == (first, f"speedup over #{first}")
    assert body["reference_reason"].startswith("the native job with the lowest id")


def test_a_job_of_another_algorithm_than_the_reference_s_has_no_speedup(harness: Harness) -> None:
    native = _timed_job(harness, "native", 10.0, 1)
    lean = _timed_job(harness, "lean_retain", 15.0, 2)
    dance = _timed_job(harness, "native", 20.0, 3, algorithm={"name": "dance_grpo"})
    rows = {row["id"]: row for row in _compare(harness, [native, lean, dance]).json()["jobs"]}
    assert (rows[native]["speedup"], rows[lean]["speedup"]) == (1.0, 1.5)
    assert (rows[dance]["samples_per_s"], rows[dance]["speedup"], rows[dance]["of_bound"]) == (20.0, None, None)


def test_a_named_reference_is_used_and_said(harness: Harness) -> None:
    native = _timed_job(harness, "native", 10.0, 1)
    lean = _timed_job(harness, "lean_retain", 20.0, 2)
    response = harness.client.get(
        "/api/v1/compare", params={"jobs": f"{native},{lean}", "reference": lean}, headers=harness.admin
    )
    body = response.json()
    assert (body["native_job_id"], body["reference"]) == (lean, f"speedup over #{lean}")
    assert [row["speedup"] for row in body["jobs"]] == [0.5, 1.0]
    assert body["reference_reason"] == "named by the caller (reference=)"


def test_a_reference_outside_the_set_is_422_and_one_you_may_not_see_is_404(harness: Harness) -> None:
    native = _timed_job(harness, "native", 10.0, 1)
    outside = _timed_job(harness, "native", 10.0, 2)
    stranger = harness.add_user("mallory", "other-team")
    theirs = harness.submit_ok({"name": "theirs"}, headers=stranger)

    def ask(jobs: int, reference: int, headers: dict[str, str]) -> Any:
        return harness.client.get("/api/v1/compare", params={"jobs": jobs, "reference": reference}, headers=headers)

    refused = ask(native, outside, harness.admin)
    assert refused.status_code == 422
    assert refused.json()["detail"][0]["field"] == "reference"
    assert f"job {outside} is not one of the compared jobs" in refused.json()["detail"][0]["message"]
    hidden = ask(theirs, native, stranger)
    assert hidden.status_code == 404
    assert hidden.json() == {"detail": f"job {native} not found"}
