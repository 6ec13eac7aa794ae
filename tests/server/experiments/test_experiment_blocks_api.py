"""POST /api/v1/experiments under fair timing: cells queued block by block, the warning of an experiment too
small for a verdict, and each cell's host load as its trainer reported it."""

from __future__ import annotations

from typing import Any

from server_harness import Harness

SPEC = {"name": "base", "algorithm": {"total_steps": 2}}


def _created(harness: Harness, *axes: tuple[str, list[Any]]) -> dict[str, Any]:
    body = {"name": "exp", "spec": SPEC, "axes": [{"path": p, "values": v} for p, v in axes]}
    response = harness.client.post("/api/v1/experiments", json=body, headers=harness.admin)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_fair_timing_queues_one_block_per_seed_with_every_second_block_in_reverse(harness: Harness) -> None:
    harness.add_host("gpu-1", device_type="cpu", count=2)
    body = _created(harness, ("executor.name", ["native", "lean_retain", "jagg"]), ("seed", [1, 2]))
    queued = sorted(body["cells"], key=lambda c: c["position"])
    assert [(c["block"], c["values"]["seed"]) for c in queued] == [(0, 1)] * 3 + [(1, 2)] * 3
    first = [c["values"]["executor.name"] for c in queued[:3]]
    assert [c["values"]["executor.name"] for c in queued[3:]] == first[::-1]


def test_an_executor_axis_with_fewer_than_two_seeds_is_accepted_with_a_warning_that_no_verdict_will_be_given(
    harness: Harness,
) -> None:
    harness.add_host("gpu-1", device_type="cpu", count=2)
    one_seed = _created(harness, ("executor.name", ["native", "jagg"]))
    assert one_seed["warnings"] == [
        "1 seed: no verdict will be given on the executors; a verdict needs 3 seeds (add an axis seed=1,2,3)"
    ]
    assert harness.client.get(f"/api/v1/experiments/{one_seed['id']}", headers=harness.admin).json()["warnings"]
    enough = _created(harness, ("executor.name", ["native", "jagg"]), ("seed", [1, 2, 3]))
    assert enough["warnings"] == []


def test_the_summary_records_each_cell_s_host_load_as_its_trainer_reported_it(harness: Harness) -> None:
    host = harness.add_host("gpu-1", device_type="cpu", count=2)
    body = _created(harness, ("executor.name", ["native", "jagg"]))
    job_id = body["cells"][0]["job_id"]
    token = harness.start_job(job_id, host_id=host)
    steps = [
        {"step": i, "wall_time": 1000.0 + i, "values": {"host/load_per_core": load, "throughput/samples_per_s": 5.0}}
        for i, load in enumerate([1.0, 2.0, 3.0])
    ]
    response = harness.client.post(
        f"/api/v1/ingest/{job_id}/metrics", json={"attempt": 1, "steps": steps}, headers=token
    )
    assert response.status_code == 200, response.text
    summary = harness.client.get(f"/api/v1/experiments/{body['id']}", headers=harness.admin).json()["summary"]
    assert summary["host_loads"] == {str(job_id): 2.0}
    assert [f["problem"] for f in summary["flags"] if f["job_id"] == job_id] == [
        "host load 2.00 per core while it ran (above 1)"
    ]
