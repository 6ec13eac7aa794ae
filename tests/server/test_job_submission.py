"""POST /api/v1/jobs: a runnable spec is queued; anything the trainer cannot run is a 422 naming the field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_harness import Harness


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: spec validation happens before any SQL that differs between databases."""
    return migrated_sqlite_url


def test_valid_spec_is_queued_in_the_callers_team(harness: Harness) -> None:
    response = harness.submit({"name": "tiny", "algorithm": {"total_steps": 3}})
    assert response.status_code == 201
    body = response.json()
    assert (body["status"], body["name"], body["team"], body["owner"]) == ("queued", "tiny", "default", "admin")
    assert body["spec"]["algorithm"]["total_steps"] == 3
    assert [e["status"] for e in body["events"]] == ["queued"]


def test_spec_sent_as_form_content_type_is_still_read_as_json(harness: Harness) -> None:
    """`curl -d @spec.json` sends application/x-www-form-urlencoded; the README's command must work."""
    response = harness.client.post(
        "/api/v1/jobs",
        content=b'{"name": "curl"}',
        headers={**harness.admin, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert response.status_code == 201 and response.json()["name"] == "curl"


BAD_SPECS: list[tuple[str, dict[str, Any], str]] = [
    ("unknown executor", {"executor": {"name": "warp_drive"}}, "executor.name"),
    ("group_size below 2", {"algorithm": {"group_size": 1}}, "algorithm.group_size"),
    ("negative steps", {"algorithm": {"total_steps": -5}}, "algorithm.total_steps"),
    (
        "train_timesteps not below sampling_steps",
        {"algorithm": {"sampling_steps": 4, "train_timesteps": 4}},
        "algorithm.train_timesteps",
    ),
    ("unknown reward", {"reward": [{"name": "vibes"}]}, "reward.0.name"),
    ("missing model path", {"model": {"path": "/nonexistent/sfumato/model"}}, "model.path"),
    ("cps for an algorithm without it", {"algorithm": {"name": "dance_grpo", "sampler": "cps"}}, "algorithm.sampler"),
    ("another executor's option", {"executor": {"name": "native", "group_width": 4}}, "executor.group_width"),
    ("fp16 for flux", {"model": {"family": "flux", "precision": "fp16"}}, "model.precision"),
    ("fp16 with jagg", {"model": {"precision": "fp16"}, "executor": {"name": "jagg"}}, "model.precision"),
    ("resolution off the 16 px step", {"model": {"resolution": [500, 512]}}, "model.resolution"),
    ("resolution over wan's maximum", {"model": {"family": "wan", "resolution": [1296, 720]}}, "model.resolution"),
]


@pytest.mark.parametrize(("case", "spec", "field"), BAD_SPECS, ids=[c[0] for c in BAD_SPECS])
def test_bad_spec_is_422_naming_the_field(harness: Harness, case: str, spec: dict[str, Any], field: str) -> None:
    response = harness.submit(spec)
    assert response.status_code == 422, response.text
    assert field in [e["field"] for e in response.json()["detail"]]


def test_a_family_and_algorithm_upstream_does_not_pair_is_422_naming_both(harness: Harness) -> None:
    response = harness.submit({"model": {"family": "qwen_image"}, "algorithm": {"name": "dgpo"}})
    assert response.status_code == 422, response.text
    (problem,) = response.json()["detail"]
    assert problem["field"] == "algorithm.name"
    assert "'qwen_image'" in problem["message"] and "'dgpo'" in problem["message"]


def test_an_image_family_without_an_edit_set_is_422_naming_prompts_source(harness: Harness) -> None:
    response = harness.submit({"model": {"family": "flux_kontext"}, "prompts": {"source": "builtin:colors"}})
    assert response.status_code == 422, response.text
    problems = {p["field"]: p["message"] for p in response.json()["detail"]}
    assert "edit set" in problems["prompts.source"] and "'flux_kontext'" in problems["prompts.source"]
    assert harness.job_count() == 0


@pytest.mark.parametrize(("case", "spec", "field"), BAD_SPECS[:2], ids=[c[0] for c in BAD_SPECS[:2]])
def test_bad_spec_stores_nothing(harness: Harness, case: str, spec: dict[str, Any], field: str) -> None:
    harness.submit(spec)
    assert harness.job_count() == 0


def test_a_spec_with_several_cross_field_problems_is_one_422_listing_them_all(harness: Harness) -> None:
    spec = {"executor": {"name": "lean_reweight"}, "algorithm": {"kl_beta": 0.04, "rollout_chunks": 2}}
    response = harness.submit(spec)
    assert response.status_code == 422, response.text
    assert sorted(e["field"] for e in response.json()["detail"]) == ["algorithm.kl_beta", "algorithm.rollout_chunks"]


def test_unknown_executor_message_lists_what_is_allowed(harness: Harness) -> None:
    detail = harness.submit({"executor": {"name": "warp_drive"}}).json()["detail"]
    assert "native" in detail[0]["message"]


def test_cps_refusal_names_the_algorithm_and_what_it_allows(harness: Harness) -> None:
    detail = harness.submit({"algorithm": {"name": "flash_grpo", "sampler": "cps"}}).json()["detail"]
    assert detail == [
        {"field": "algorithm.sampler", "message": "flash_grpo has no 'cps' step in its upstream code; allowed: sde"}
    ]


def test_cps_is_accepted_for_flow_grpo_and_stored_with_the_algorithm_s_upstream_defaults(harness: Harness) -> None:
    response = harness.submit({"algorithm": {"name": "flow_grpo", "sampler": "cps"}})
    assert response.status_code == 201, response.text
    algorithm = response.json()["spec"]["algorithm"]
    assert (algorithm["sampler"], algorithm["kl_form"], algorithm["global_std"]) == ("cps", "flow_grpo", True)


def test_dance_grpo_is_stored_with_its_resolved_upstream_defaults_so_a_retry_runs_the_same(harness: Harness) -> None:
    response = harness.submit({"algorithm": {"name": "dance_grpo"}})
    assert response.status_code == 201, response.text
    algorithm = response.json()["spec"]["algorithm"]
    assert (algorithm["noise_level"], algorithm["init_same_noise"], algorithm["clip_range"]) == (0.3, True, 1e-4)


def test_a_bad_resolution_is_refused_with_the_allowed_step(harness: Harness) -> None:
    (problem,) = harness.submit({"model": {"resolution": [500, 512]}}).json()["detail"]
    assert problem["field"] == "model.resolution" and "multiple of 16" in problem["message"]


def test_model_path_outside_configured_roots_is_refused(harness: Harness, tmp_path: Path) -> None:
    model = tmp_path / "elsewhere" / "model"
    model.mkdir(parents=True)
    harness.settings.path_roots = [str(tmp_path / "models")]
    response = harness.submit({"model": {"path": str(model)}})
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "model.path"


def test_a_pipeline_folder_without_its_scheduler_config_is_422_naming_model_path_and_the_file(harness: Harness) -> None:
    model = Path(harness.settings.resolved_path_roots()[0]) / "sd3"
    model.mkdir(parents=True)
    (model / "model_index.json").write_text('{"_class_name": "StableDiffusion3Pipeline"}')
    response = harness.submit({"model": {"path": str(model)}})
    assert response.status_code == 422
    (problem,) = response.json()["detail"]
    assert problem["field"] == "model.path" and "scheduler/scheduler_config.json" in problem["message"]


def test_more_devices_than_any_host_has_is_422_on_resources_devices(harness: Harness) -> None:
    harness.add_host("gpu-a", "cuda", count=2)
    response = harness.submit({"resources": {"device_type": "cuda", "devices": 4}})
    assert response.status_code == 422
    error = response.json()["detail"][0]
    assert error["field"] == "resources.devices" and "largest registered host has 2" in error["message"]
    assert harness.job_count() == 0


def test_devices_on_a_disabled_host_do_not_count(harness: Harness) -> None:
    harness.add_host("gpu-a", "cuda", count=8, status="disabled")
    harness.add_host("gpu-b", "cuda", count=1)
    assert harness.submit({"resources": {"device_type": "cuda", "devices": 2}}).status_code == 422


def test_more_nodes_than_hosts_that_fit_is_422_on_resources_nodes(harness: Harness) -> None:
    harness.add_host("gpu-a", "cuda", count=2)
    response = harness.submit({"resources": {"device_type": "cuda", "devices": 2, "nodes": 2}})
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "resources.nodes"


def test_any_device_count_is_accepted_while_no_host_is_registered(harness: Harness) -> None:
    assert harness.submit({"resources": {"device_type": "cuda", "devices": 8}}).status_code == 201


def test_job_goes_to_the_named_team(harness: Harness) -> None:
    member = harness.add_user("bea", "vision")
    harness.join("bea", "default")
    response = harness.submit({}, member, team="vision")
    assert response.status_code == 201 and response.json()["team"] == "vision"


def test_team_the_caller_is_not_in_is_422_on_team(harness: Harness) -> None:
    harness.add_user("bea", "vision")
    response = harness.submit({}, team="vision")
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "team"


def test_viewer_cannot_submit(harness: Harness) -> None:
    viewer = harness.add_user("vic", "default", role="viewer")
    assert harness.submit({}, viewer).status_code == 403


def test_caller_in_several_teams_must_name_one(harness: Harness) -> None:
    member = harness.add_user("bea", "vision")
    harness.join("bea", "default")
    response = harness.submit({}, member)
    assert response.status_code == 422 and response.json()["detail"][0]["field"] == "team"


def test_non_object_body_is_422(harness: Harness) -> None:
    response = harness.client.post("/api/v1/jobs", json=[1, 2], headers=harness.admin)
    assert response.status_code == 422
