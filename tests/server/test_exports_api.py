"""`POST /api/v1/jobs/{id}/exports` queues an export task job on one of the job's checkpoints; the format must be
one the job's family and fine-tune mode has, the step one it has a checkpoint at, and the job one the caller sees."""

from __future__ import annotations

from typing import Any

import pytest
from server_harness import Harness, Headers

from server.models import Job
from server.states import JobKind


def _checkpointed_job(
    harness: Harness, headers: Headers, steps: tuple[int, ...] = (5, 10), family: str | None = None
) -> int:
    """A job of team lab whose trainer registered a checkpoint at each of `steps` (recorded as a job of `family`)."""
    job_id = harness.submit_ok(headers=headers)
    if family is not None:
        with harness.session() as session:
            session.get_one(Job, job_id).model_family = family
            session.commit()
    token = harness.start_job(job_id)
    for step in steps:
        body = {
            "attempt": 1,
            "kind": "checkpoint",
            "name": f"step-{step}",
            "step": step,
            "path": f"checkpoints/step-{step}",
        }
        assert harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=body, headers=token).status_code == 201
    return job_id


def _export(harness: Harness, job_id: int, headers: Headers, **body: Any) -> Any:
    return harness.client.post(f"/api/v1/jobs/{job_id}/exports", json=body, headers=headers)


def test_an_export_is_a_queued_task_job_on_the_checkpoint_at_the_step_asked(harness: Harness, lab: Headers) -> None:
    job_id = _checkpointed_job(harness, lab)
    response = _export(harness, job_id, lab, format="diffusers", step=5)
    assert response.status_code == 201, response.text
    export_id = response.json()["id"]
    with harness.session() as session:
        export = session.get_one(Job, export_id)
        source = session.get_one(Job, job_id)
        assert (export.kind, export.team_id, export.devices, export.executor) == (
            JobKind.EXPORT,
            source.team_id,
            1,
            "native",
        )
        assert export.task is not None
        assert (export.task["format"], export.task["source"]["job_id"], export.task["source"]["step"]) == (
            "diffusers",
            job_id,
            5,
        )
        assert export.task["source"]["artifact_id"] == export.source_artifact_id
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/exports", headers=lab).json()["items"]
    assert (listed["job_id"], listed["format"], listed["step"], listed["status"], listed["artifact"]) == (
        export_id,
        "diffusers",
        5,
        "queued",
        None,
    )


def test_without_a_step_the_latest_checkpoint_is_exported(harness: Harness, lab: Headers) -> None:
    job_id = _checkpointed_job(harness, lab)
    assert _export(harness, job_id, lab, format="merged").status_code == 201
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/exports", headers=lab).json()["items"]
    assert listed["step"] == 10


def test_the_export_list_names_the_formats_the_job_has(harness: Harness, lab: Headers) -> None:
    job_id = _checkpointed_job(harness, lab)
    formats = harness.client.get(f"/api/v1/jobs/{job_id}/exports", headers=lab).json()["formats"]
    assert formats == ["diffusers", "comfyui", "merged"]


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"format": "onnx"}, "format", "'onnx' is not an export"),
        ({"format": "diffusers", "step": 7}, "step", "no checkpoint at step 7; its steps: 5, 10"),
    ],
)
def test_a_format_or_step_the_job_lacks_is_a_422_naming_it_and_nothing_is_queued(
    harness: Harness, lab: Headers, body: dict[str, Any], field: str, says: str
) -> None:
    job_id = _checkpointed_job(harness, lab)
    before = harness.job_count()
    response = _export(harness, job_id, lab, **body)
    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["field"] == field and says in error["message"]
    assert harness.job_count() == before


def test_a_job_without_a_checkpoint_cannot_be_exported(harness: Harness, lab: Headers) -> None:
    job_id = _checkpointed_job(harness, lab, steps=())
    response = _export(harness, job_id, lab, format="diffusers")
    assert response.status_code == 422
    assert response.json()["detail"][0] == {"field": "step", "message": f"job {job_id} has no checkpoint yet"}


def test_another_team_s_job_is_not_found_and_a_viewer_may_not_export(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    job_id = _checkpointed_job(harness, lab)
    assert _export(harness, job_id, studio, format="diffusers").status_code == 404
    assert harness.client.get(f"/api/v1/jobs/{job_id}/exports", headers=studio).status_code == 404
    viewer = harness.add_user("vic", "lab", "viewer")
    assert _export(harness, job_id, viewer, format="diffusers").status_code == 403
    assert harness.client.get(f"/api/v1/jobs/{job_id}/exports", headers=viewer).status_code == 200


def test_an_export_job_has_no_checkpoints_of_its_own_to_export(harness: Harness, lab: Headers) -> None:
    job_id = _checkpointed_job(harness, lab)
    export_id = _export(harness, job_id, lab, format="diffusers").json()["id"]
    response = _export(harness, export_id, lab, format="diffusers")
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "job_id"
