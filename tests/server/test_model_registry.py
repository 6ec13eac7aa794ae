"""The model registry: a job's checkpoint registered as a numbered version of a team's model carries the lineage of
the job at that step (its reward figures the job's own), aliases move by members and are audited, a checkpoint or
job that is not there is refused naming the field, and a version's download resolves to its artifact."""

from __future__ import annotations

from typing import Any

import pytest
from server_harness import Harness, Headers, png_bytes

from server.models import Artifact
from server.services.code_version import code_version


def report_steps(harness: Harness, job_id: int, token: Headers, attempt: int, rewards: dict[int, float]) -> None:
    steps = [{"step": s, "wall_time": float(s), "values": {"reward/mean": r}} for s, r in rewards.items()]
    response = harness.client.post(
        f"/api/v1/ingest/{job_id}/metrics", json={"attempt": attempt, "steps": steps}, headers=token
    )
    assert response.status_code == 200, response.text


def eval_sample(harness: Harness, job_id: int, token: Headers, attempt: int, step: int, reward: float) -> None:
    form = {"attempt": str(attempt), "step": str(step), "kind": "eval", "prompt": "a red apple", "seed": "7",
            "reward": str(reward)}  # fmt: skip
    files = {"image": ("sample.png", png_bytes(), "image/png")}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/samples", data=form, files=files, headers=token)
    assert response.status_code == 201, response.text


def checkpoint(harness: Harness, job_id: int, token: Headers, attempt: int, step: int) -> int:
    body = {"attempt": attempt, "kind": "checkpoint", "name": f"step-{step}", "step": step,
            "path": f"checkpoints/step-{step}"}  # fmt: skip
    response = harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=body, headers=token)
    assert response.status_code == 201, response.text
    return int(response.json()["id"])


def trained_job(harness: Harness, headers: Headers) -> int:
    """A job with checkpoints at steps 2 and 4, a reward at every step and eval samples at step 2."""
    job_id = harness.submit_ok({"name": "sunset-lora"}, headers=headers)
    token = harness.start_job(job_id)
    report_steps(harness, job_id, token, 1, {1: 0.1, 2: 0.2, 3: 0.3, 4: 0.4})
    eval_sample(harness, job_id, token, 1, 2, 0.6)
    checkpoint(harness, job_id, token, 1, 2)
    checkpoint(harness, job_id, token, 1, 4)
    return job_id


def register(harness: Harness, headers: Headers, **body: Any) -> Any:
    return harness.client.post("/api/v1/models", json={"name": "sunset", **body}, headers=headers)


def registered(harness: Harness, headers: Headers, **body: Any) -> dict[str, Any]:
    response = register(harness, headers, **body)
    assert response.status_code == 201, response.text
    return dict(response.json())


def test_a_registered_checkpoint_is_version_1_with_the_lineage_of_its_job(harness: Harness, lab: Headers) -> None:
    job_id = trained_job(harness, lab)
    version = registered(harness, lab, job_id=job_id, step=2)
    job = harness.client.get(f"/api/v1/jobs/{job_id}", headers=lab).json()
    lineage = version["lineage"]
    assert (version["model"], version["team"], version["version"], version["step"]) == ("sunset", "lab", 1, 2)
    assert (version["created_by"], version["job_id"]) == ("lena", job_id)
    assert lineage["job"] == {"id": job_id, "name": "sunset-lora"}
    assert lineage["spec"] == job["spec"]
    assert (lineage["algorithm"], lineage["executor"]) == (job["algorithm"], job["executor"])
    assert lineage["base_model"] == {"family": job["spec"]["model"]["family"], "path": job["spec"]["model"]["path"]}
    assert lineage["code_version"] == code_version().model_dump()


def test_the_lineage_rewards_are_the_jobs_own_figures_at_the_step_after_a_retry(harness: Harness, lab: Headers) -> None:
    job_id = trained_job(harness, lab)
    token = harness.start_job(job_id)  # attempt 2 resumes at step 2: its points replace attempt 1's from there
    report_steps(harness, job_id, token, 2, {2: 0.25, 3: 0.35})
    eval_sample(harness, job_id, token, 2, 2, 0.7)
    checkpoint(harness, job_id, token, 2, 2)
    lineage = registered(harness, lab, job_id=job_id, step=2)["lineage"]
    history = harness.client.get(f"/api/v1/jobs/{job_id}/metrics/history?key=reward/mean", headers=lab).json()
    evals = harness.client.get(f"/api/v1/jobs/{job_id}/samples/eval-rewards", headers=lab).json()
    [training] = [p["value"] for p in history["points"] if p["step"] == 2 and p["current"]]
    assert lineage["training_reward"] == training == 0.25
    assert lineage["eval_reward"] == dict(zip(evals["steps"], evals["values"], strict=True))[2] == 0.7


def test_a_step_without_eval_samples_has_no_eval_reward(harness: Harness, lab: Headers) -> None:
    lineage = registered(harness, lab, job_id=trained_job(harness, lab), step=4)["lineage"]
    assert (lineage["training_reward"], lineage["eval_reward"]) == (0.4, None)


def test_the_next_registration_is_version_2_and_takes_the_latest_checkpoint_without_a_step(
    harness: Harness, lab: Headers
) -> None:
    job_id = trained_job(harness, lab)
    registered(harness, lab, job_id=job_id, step=2)
    second = registered(harness, lab, job_id=job_id)
    assert (second["version"], second["step"]) == (2, 4)
    model = harness.client.get("/api/v1/models/sunset", headers=lab).json()
    assert [v["version"] for v in model["versions"]] == [2, 1]
    assert model["latest_version"] == 2


def test_registering_by_artifact_id_takes_that_checkpoint(harness: Harness, lab: Headers) -> None:
    job_id = trained_job(harness, lab)
    artifacts = harness.client.get(f"/api/v1/jobs/{job_id}/artifacts", headers=lab).json()["items"]
    first = next(a for a in artifacts if a["step"] == 2)
    version = registered(harness, lab, job_id=job_id, artifact_id=first["id"])
    assert (version["artifact_id"], version["step"]) == (first["id"], 2)


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"step": 3}, "step", "no checkpoint at step 3; its steps: 2, 4"),
        ({"artifact_id": 999_999}, "artifact_id", "no checkpoint artifact 999999"),
        ({"step": 2, "artifact_id": 1}, "artifact_id", "not both"),
        ({"name": "9lives"}, "name", "pattern"),
        ({"name": "sunset:2"}, "name", "pattern"),
    ],
)
def test_a_checkpoint_that_is_not_there_or_a_bad_name_is_refused_naming_the_field(
    harness: Harness, lab: Headers, body: dict[str, Any], field: str, says: str
) -> None:
    response = register(harness, lab, job_id=trained_job(harness, lab), **body)
    assert response.status_code == 422
    [error] = [e for e in response.json()["detail"] if e["field"].endswith(field)]
    assert says in str(error), error
    assert harness.client.get("/api/v1/models", headers=lab).json()["items"] == []


def test_another_teams_job_is_refused_as_a_missing_one_naming_job_id(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    job_id = trained_job(harness, lab)
    theirs = register(harness, studio, job_id=job_id)
    missing = register(harness, studio, job_id=2_000_000_001)
    assert (theirs.status_code, theirs.json()) == (
        422,
        {"detail": [{"field": "job_id", "message": f"job {job_id} not found"}]},
    )
    assert (missing.status_code, missing.json()) == (
        422,
        {"detail": [{"field": "job_id", "message": "job 2000000001 not found"}]},
    )


def test_a_job_without_checkpoints_is_refused_naming_job_id(harness: Harness, lab: Headers) -> None:
    job_id = harness.submit_ok({"name": "fresh"}, headers=lab)
    response = register(harness, lab, job_id=job_id)
    assert response.status_code == 422
    assert response.json()["detail"] == [{"field": "job_id", "message": f"job {job_id} has no checkpoint yet"}]


def set_alias(harness: Harness, headers: Headers, alias: str, version: int) -> Any:
    return harness.client.put(f"/api/v1/models/sunset/aliases/{alias}", json={"version": version}, headers=headers)


def test_moving_an_alias_is_audited_with_who_and_the_versions_it_moved_between(harness: Harness, lab: Headers) -> None:
    member = harness.add_user("mia", "lab", "member")
    job_id = trained_job(harness, lab)
    registered(harness, lab, job_id=job_id, step=2)
    registered(harness, lab, job_id=job_id, step=4)
    assert set_alias(harness, member, "production", 1).status_code == 200
    moved = set_alias(harness, member, "production", 2)
    assert moved.status_code == 200
    assert (moved.json()["version"], moved.json()["updated_by"]) == (2, "mia")
    assert harness.client.delete("/api/v1/models/sunset/aliases/production", headers=member).status_code == 204
    team_id = harness.client.get("/api/v1/teams", headers=lab).json()["items"][0]["id"]
    events = harness.client.get(f"/api/v1/teams/{team_id}/audit?action=model.alias", headers=lab).json()["items"]
    assert [(e["actor"], e["detail"]) for e in reversed(events)] == [
        ("mia", "sunset@production: none -> version 1"),
        ("mia", "sunset@production: version 1 -> version 2"),
        ("mia", "sunset@production: version 2 -> none"),
    ]


def test_aliases_show_on_the_model_and_on_their_version(harness: Harness, lab: Headers) -> None:
    job_id = trained_job(harness, lab)
    registered(harness, lab, job_id=job_id, step=2)
    registered(harness, lab, job_id=job_id, step=4)
    set_alias(harness, lab, "candidate", 2)
    set_alias(harness, lab, "production", 1)
    model = harness.client.get("/api/v1/models/sunset", headers=lab).json()
    assert [(a["name"], a["version"]) for a in model["aliases"]] == [("candidate", 2), ("production", 1)]
    assert {v["version"]: v["aliases"] for v in model["versions"]} == {2: ["candidate"], 1: ["production"]}


@pytest.mark.parametrize(("alias", "version", "field"), [("prod:1", 1, "alias"), ("production", 7, "version")])
def test_a_bad_alias_or_a_missing_version_is_refused_naming_the_field(
    harness: Harness, lab: Headers, alias: str, version: int, field: str
) -> None:
    registered(harness, lab, job_id=trained_job(harness, lab))
    response = set_alias(harness, lab, alias, version)
    assert response.status_code == 422
    assert response.json()["detail"][0]["field"] == field
    assert harness.client.get("/api/v1/models/sunset", headers=lab).json()["aliases"] == []


def test_viewers_and_read_tokens_may_read_but_not_register_or_move_aliases(harness: Harness, lab: Headers) -> None:
    job_id = trained_job(harness, lab)
    registered(harness, lab, job_id=job_id)
    viewer = harness.add_user("vic", "lab", "viewer")
    reader = harness.add_user("rita", "lab", "admin", scope="read")
    for headers in (viewer, reader):
        assert harness.client.get("/api/v1/models/sunset", headers=headers).status_code == 200
        assert register(harness, headers, job_id=job_id).status_code == 403
        assert set_alias(harness, headers, "production", 1).status_code == 403
    assert harness.client.get("/api/v1/models/sunset", headers=lab).json()["latest_version"] == 1


def test_another_teams_model_and_alias_are_not_found(harness: Harness, lab: Headers, studio: Headers) -> None:
    registered(harness, lab, job_id=trained_job(harness, lab))
    set_alias(harness, lab, "production", 1)
    for method, path, body in (
        ("GET", "/api/v1/models/sunset", None),
        ("GET", "/api/v1/models/sunset/versions/1", None),
        ("PUT", "/api/v1/models/sunset/aliases/production", {"version": 1}),
        ("DELETE", "/api/v1/models/sunset/aliases/production", None),
    ):
        response = harness.client.request(method, path, json=body, headers=studio)
        assert (response.status_code, response.json()) == (404, {"detail": "model 'sunset' not found"}), path
    assert harness.client.get("/api/v1/models", headers=studio).json()["items"] == []


def test_a_name_in_two_of_the_callers_teams_is_chosen_with_team(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    registered(harness, lab, job_id=trained_job(harness, lab))
    registered(harness, studio, job_id=trained_job(harness, studio))
    harness.join("lena", "studio", "member")
    ambiguous = harness.client.get("/api/v1/models/sunset", headers=lab)
    assert ambiguous.status_code == 422 and ambiguous.json()["detail"][0]["field"] == "team"
    chosen = harness.client.get("/api/v1/models/sunset?team=studio", headers=lab)
    assert chosen.json()["team"] == "studio"


def add_export(harness: Harness, job_id: int, export_format: str, step: int) -> int:
    """An export artifact as an export of the job's checkpoint registers it."""
    with harness.session() as session:
        artifact = Artifact(job_id=job_id, attempt=1, kind="export", name=export_format, step=step,
                            path=f"exports/{export_format}-step-{step}")  # fmt: skip
        session.add(artifact)
        session.commit()
        return artifact.id


def test_export_formats_are_read_from_the_exports_at_the_versions_step(harness: Harness, lab: Headers) -> None:
    job_id = trained_job(harness, lab)
    registered(harness, lab, job_id=job_id, step=2)
    assert harness.client.get("/api/v1/models/sunset/versions/1", headers=lab).json()["export_formats"] == []
    add_export(harness, job_id, "comfyui", 2)
    add_export(harness, job_id, "diffusers", 2)
    add_export(harness, job_id, "merged", 4)
    shown = harness.client.get("/api/v1/models/sunset/versions/1", headers=lab).json()
    assert shown["export_formats"] == ["comfyui", "diffusers"]
    assert [(e["format"], e["job_id"]) for e in shown["exports"]] == [("comfyui", job_id), ("diffusers", job_id)]


def test_a_versions_download_resolves_to_its_checkpoint_or_export_artifact(harness: Harness, lab: Headers) -> None:
    job_id = trained_job(harness, lab)
    version = registered(harness, lab, job_id=job_id, step=2)
    export_id = add_export(harness, job_id, "comfyui", 2)
    url = "/api/v1/models/sunset/versions/1/download"
    plain = harness.client.get(url, headers=lab).json()
    exported = harness.client.get(f"{url}?format=comfyui", headers=lab).json()
    assert (plain["artifact_id"], plain["kind"]) == (version["artifact_id"], "checkpoint")
    assert plain["url"] == f"/api/v1/jobs/{job_id}/artifacts/{version['artifact_id']}/download"
    assert (exported["artifact_id"], exported["name"]) == (export_id, "comfyui")
    assert exported["url"] == f"/api/v1/jobs/{job_id}/artifacts/{export_id}/download"
    refused = harness.client.get(f"{url}?format=merged", headers=lab)
    assert refused.status_code == 422
    assert refused.json()["detail"] == [
        {"field": "format", "message": "no 'merged' export of this version; its exports: comfyui"}
    ]


def test_an_export_job_of_the_versions_checkpoint_shows_its_format_and_downloads(
    harness: Harness, lab: Headers
) -> None:
    job_id = trained_job(harness, lab)
    version = registered(harness, lab, job_id=job_id, step=2)
    queued = harness.client.post(f"/api/v1/jobs/{job_id}/exports", json={"format": "diffusers", "step": 2}, headers=lab)
    assert queued.status_code in (201, 202), queued.text
    export_id = add_export(harness, int(queued.json()["id"]), "diffusers", 2)
    shown = harness.client.get("/api/v1/models/sunset/versions/1", headers=lab).json()
    resolved = harness.client.get("/api/v1/models/sunset/versions/1/download?format=diffusers", headers=lab).json()
    assert shown["export_formats"] == ["diffusers"]
    assert (resolved["artifact_id"], resolved["job_id"]) == (export_id, queued.json()["id"])
    assert version["artifact_id"] != export_id
