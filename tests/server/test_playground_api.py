"""`POST /api/v1/jobs/{id}/playground` queues a playground task job on one of the job's checkpoints with prompts,
seeds and sampler settings in bounds (the job's own sampler where left out); `GET` lists the runs with their grid."""

from __future__ import annotations

from typing import Any

import pytest
from server_harness import Harness, Headers
from sqlalchemy import select
from test_exports_api import _checkpointed_job
from uploaded_artifacts import register, upload, uploaded

from server.models import Artifact, Job
from server.states import JobKind


def _playground(harness: Harness, job_id: int, headers: Headers, **body: Any) -> Any:
    return harness.client.post(f"/api/v1/jobs/{job_id}/playground", json=body, headers=headers)


def _runs(harness: Harness, job_id: int, headers: Headers) -> list[dict[str, Any]]:
    response = harness.client.get(f"/api/v1/jobs/{job_id}/playground", headers=headers)
    assert response.status_code == 200, response.text
    return list(response.json()["items"])


def test_a_run_is_a_queued_playground_job_on_the_checkpoint_with_the_jobs_sampler_where_left_out(
    harness: Harness, lab: Headers
) -> None:
    job_id = _checkpointed_job(harness, lab)
    response = _playground(harness, job_id, lab, prompts=["a red apple", "a cat"], seeds=[3, 4], step=5)
    assert response.status_code == 201, response.text
    run_id = response.json()["id"]
    with harness.session() as session:
        run, source = session.get_one(Job, run_id), session.get_one(Job, job_id)
        assert (run.kind, run.team_id, run.devices) == (JobKind.PLAYGROUND, source.team_id, 1)
        assert run.task is not None and run.task["source"]["artifact_id"] == run.source_artifact_id
        algorithm = source.spec["algorithm"]
    [listed] = _runs(harness, job_id, lab)
    assert listed == listed | {
        "job_id": run_id,
        "status": "queued",
        "source_job_id": job_id,
        "step": 5,
        "prompts": ["a red apple", "a cat"],
        "seeds": [3, 4],
        "grid_url": None,
        "grid_artifact_id": None,
    }
    assert listed["sampler"] == {
        "steps": algorithm.get("sampling_steps", 10),
        "guidance_scale": algorithm.get("cfg_scale", 1.0),
        "shift": algorithm.get("shift"),
    }


def test_the_sampler_settings_asked_are_the_runs(harness: Harness, lab: Headers) -> None:
    job_id = _checkpointed_job(harness, lab)
    body = {"prompts": ["a red apple"], "steps": 12, "guidance_scale": 4.5, "shift": 3.0}
    assert _playground(harness, job_id, lab, **body).status_code == 201
    [listed] = _runs(harness, job_id, lab)
    assert (listed["sampler"], listed["seeds"], listed["step"]) == (
        {"steps": 12, "guidance_scale": 4.5, "shift": 3.0},
        [0],
        10,
    )


def test_the_grid_url_is_the_download_of_the_grid_once_the_platform_holds_its_bytes(
    harness: Harness, lab: Headers
) -> None:
    job_id = _checkpointed_job(harness, lab)
    run_id = _playground(harness, job_id, lab, prompts=["a red apple"]).json()["id"]
    token = harness.start_job(run_id)
    images = uploaded(harness, run_id, token, "playground", "images", b"a tar of images", step=10)
    grid = register(harness, run_id, token, "playground", "grid", "playground/grid.png", step=10)
    [listed] = _runs(harness, job_id, lab)
    assert (listed["grid_artifact_id"], listed["images_artifact_id"]) == (grid, images)
    assert (listed["grid_url"], listed["images_url"]) == (None, f"/api/v1/jobs/{run_id}/artifacts/{images}/download")
    upload(harness, run_id, grid, token, b"a grid png")
    [listed] = _runs(harness, job_id, lab)
    assert listed["grid_url"] == f"/api/v1/jobs/{run_id}/artifacts/{grid}/download"


TOO_LONG = "x" * 501


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"prompts": []}, "prompts"),
        ({"prompts": [f"prompt {i}" for i in range(9)]}, "prompts"),
        ({"prompts": [""]}, "prompts.0"),
        ({"prompts": ["   "]}, "prompts.0"),
        ({"prompts": [TOO_LONG]}, "prompts.0"),
        ({"prompts": ["a cat"], "seeds": []}, "seeds"),
        ({"prompts": ["a cat"], "seeds": [1, 2, 3, 4, 5]}, "seeds"),
        ({"prompts": ["a cat"], "seeds": [-1]}, "seeds.0"),
        ({"prompts": ["a cat"], "steps": 1}, "steps"),
        ({"prompts": ["a cat"], "steps": 101}, "steps"),
        ({"prompts": ["a cat"], "guidance_scale": 0.5}, "guidance_scale"),
        ({"prompts": ["a cat"], "guidance_scale": 31}, "guidance_scale"),
        ({"prompts": ["a cat"], "shift": 0}, "shift"),
        ({"prompts": ["a cat"], "sampler": "dpm"}, "sampler"),
        ({"prompts": ["a cat"], "step": 7}, "step"),
    ],
)
def test_bad_input_is_a_422_naming_the_field_and_nothing_is_queued(
    harness: Harness, lab: Headers, body: dict[str, Any], field: str
) -> None:
    job_id = _checkpointed_job(harness, lab)
    before = harness.job_count()
    response = _playground(harness, job_id, lab, **body)
    assert response.status_code == 422, response.text
    assert [error["field"] for error in response.json()["detail"]] == [field]
    assert harness.job_count() == before


def test_an_image_family_s_job_is_a_422_naming_prompts_and_nothing_is_queued(harness: Harness, lab: Headers) -> None:
    """A FLUX.1 Kontext job edits each prompt row's image: text prompts alone cannot draw from it."""
    job_id = _checkpointed_job(harness, lab, family="flux_kontext")
    before = harness.job_count()
    response = _playground(harness, job_id, lab, prompts=["a cat"])
    assert response.status_code == 422, response.text
    assert [error["field"] for error in response.json()["detail"]] == ["prompts"]
    assert harness.job_count() == before


def test_another_teams_job_is_not_found_and_a_viewer_may_list_but_not_run(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    job_id = _checkpointed_job(harness, lab)
    assert _playground(harness, job_id, studio, prompts=["a cat"]).status_code == 404
    assert harness.client.get(f"/api/v1/jobs/{job_id}/playground", headers=studio).status_code == 404
    viewer = harness.add_user("vic", "lab", "viewer")
    assert _playground(harness, job_id, viewer, prompts=["a cat"]).status_code == 403
    assert _runs(harness, job_id, viewer) == []


def _version(harness: Harness, headers: Headers, job_id: int, step: int) -> str:
    response = harness.client.post(
        "/api/v1/models", json={"name": "sunset", "job_id": job_id, "step": step}, headers=headers
    )
    assert response.status_code == 201, response.text
    return "/api/v1/models/sunset/versions/1/playground"


def test_a_run_on_a_model_version_reads_its_checkpoint_and_is_saved_with_it(harness: Harness, lab: Headers) -> None:
    job_id = _checkpointed_job(harness, lab)
    url = _version(harness, lab, job_id, step=5)
    response = harness.client.post(url, json={"prompts": ["a red apple"], "seeds": [1]}, headers=lab)
    assert response.status_code == 201, response.text
    _playground(harness, job_id, lab, prompts=["a cat"], step=10)  # another checkpoint of the job: not the version's
    with harness.session() as session:
        checkpoint = session.scalars(select(Artifact.id).where(Artifact.job_id == job_id, Artifact.step == 5)).one()
    [saved] = harness.client.get(url, headers=lab).json()["items"]
    assert (saved["job_id"], saved["source_artifact_id"], saved["step"]) == (response.json()["id"], checkpoint, 5)
    assert len(_runs(harness, job_id, lab)) == 2


def test_a_versions_checkpoint_is_fixed_and_a_viewer_may_list_but_not_run(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    url = _version(harness, lab, _checkpointed_job(harness, lab), step=5)
    response = harness.client.post(url, json={"prompts": ["a cat"], "step": 10}, headers=lab)
    assert response.status_code == 422 and [e["field"] for e in response.json()["detail"]] == ["step"]
    assert harness.client.post(url, json={"prompts": ["a cat"]}, headers=studio).status_code == 404
    viewer = harness.add_user("vic", "lab", "viewer")
    assert harness.client.post(url, json={"prompts": ["a cat"]}, headers=viewer).status_code == 403
    assert harness.client.get(url, headers=viewer).json()["items"] == []
