"""A job's peak memory is one server figure: the jobs list, the job and the compare answer give the same number,
the largest memory/peak_bytes of its current points."""

from __future__ import annotations

from server_harness import Harness, Headers

PEAKS = [3.0 * 2**30, 5.5 * 2**30, 4.0 * 2**30]


def report_memory(
    harness: Harness, job_id: int, token: Headers, attempt: int, steps: range, peaks: list[float]
) -> None:
    body = {
        "attempt": attempt,
        "steps": [
            {"step": step, "wall_time": 1000.0 + step, "values": {"memory/peak_bytes": peak}}
            for step, peak in zip(steps, peaks, strict=True)
        ],
    }
    sent = harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=body, headers=token)
    assert sent.status_code == 200, sent.text


def figures(harness: Harness, job_id: int) -> tuple[object, object, object]:
    detail = harness.client.get(f"/api/v1/jobs/{job_id}", headers=harness.admin).json()
    listed = next(
        j for j in harness.client.get("/api/v1/jobs", headers=harness.admin).json()["items"] if j["id"] == job_id
    )
    compared = harness.client.get(f"/api/v1/compare?jobs={job_id}", headers=harness.admin).json()["jobs"][0]
    return detail["peak_memory_bytes"], listed["peak_memory_bytes"], compared["peak_memory_bytes"]


def test_the_job_the_jobs_list_and_compare_give_the_largest_reported_peak(harness: Harness) -> None:
    job_id = harness.submit_ok()
    report_memory(harness, job_id, harness.start_job(job_id), 1, range(1, 4), PEAKS)
    assert figures(harness, job_id) == (5.5 * 2**30,) * 3


def test_a_job_that_reported_nothing_has_no_peak_memory(harness: Harness) -> None:
    job_id = harness.submit_ok()
    assert figures(harness, job_id) == (None, None, None)


def test_steps_a_retry_superseded_do_not_count(harness: Harness) -> None:
    job_id = harness.submit_ok()
    report_memory(harness, job_id, harness.start_job(job_id), 1, range(1, 4), PEAKS)
    # The retry resumed from step 1 and reported steps 2 and 3 again, lower: attempt 1's 5.5 GiB at step 2 is gone.
    retried = harness.start_job(job_id)
    report_memory(harness, job_id, retried, 2, range(2, 4), [2.0 * 2**30, 2.5 * 2**30])
    assert figures(harness, job_id) == (3.0 * 2**30,) * 3
