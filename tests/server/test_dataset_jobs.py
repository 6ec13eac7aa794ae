"""A spec names a team dataset, `dataset:<name>[@<version>][:<split>]`: the platform pins the version at submit
(the stored spec names it), refuses a name, version or split the team does not have naming the field, and a
running job's trainer fetches that version with its own job token into its own folder on another host, checked
against its SHA-256, and reads it as a local prompt set of its format."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dataset_support import module_platform, served, uploaded
from server_harness import Harness, Headers, png_bytes
from test_exports_api import _checkpointed_job as checkpointed_job

from server.models import DatasetVersion, Job
from trainer.dataset_fetch import with_local_datasets
from trainer.prompts import load_prompts
from trainer.reporting.artifact_fetch import FetchFailed
from trainer.spec import parse_spec

GENEVAL_ROW = {"tag": "colors", "include": [{"class": "car", "count": 1, "color": "red"}], "prompt": "a red car"}
EDIT_ROWS = b'{"prompt": "make it red", "image": "images/cat.png"}\n'
CAT = png_bytes(16, 16)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, migrated_templates: dict[str, str]) -> Iterator[Harness]:
    roots = [str(tmp_path_factory.getbasetemp())]  # where a test's local model folder lies
    yield from module_platform(tmp_path_factory.mktemp("server-host"), migrated_templates["sqlite"], path_roots=roots)


@pytest.fixture(scope="module")
def lab(harness: Harness) -> Headers:
    harness.add_host("cpu-1", device_type="cpu")
    headers = harness.add_user("lena", "lab", "admin")
    uploaded(harness, headers, "captions", "text", b"a cat\na dog\n", test=b"a bird\na fish\n")
    uploaded(harness, headers, "captions", "text", b"a red cat\n")
    uploaded(harness, headers, "objects", "geneval", json.dumps(GENEVAL_ROW).encode())
    uploaded(harness, headers, "edits", "edit", EDIT_ROWS, images={"images/cat.png": CAT})
    return headers


@pytest.fixture(scope="module")
def live(harness: Harness) -> Iterator[str]:
    """The app served over real HTTP, as a worker host reaches the platform."""
    yield from served(harness)


def job_spec(source: str, **prompts: Any) -> dict[str, Any]:
    return {"name": "from-a-dataset", "resources": {"device_type": "cpu"}, "prompts": {"source": source, **prompts}}


def stored_spec(harness: Harness, job_id: int) -> dict[str, Any]:
    with harness.session() as session:
        return dict(session.get_one(Job, job_id).spec)


def on_another_host(
    harness: Harness, live: str, job_id: int, host_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[str, list[str], list[str]]:
    """The trainer's prompt loading for the job (its stored spec made local, then read by the trainer's loaders) on
    a "host" whose folder is not the server's, reaching the platform over HTTP with the job's token."""
    token = harness.start_job(job_id)["Authorization"].removeprefix("Bearer ")
    monkeypatch.setenv("SFUMATO_API_URL", live)
    monkeypatch.setenv("SFUMATO_JOB_TOKEN", token)
    spec = with_local_datasets(parse_spec(stored_spec(harness, job_id)), host_dir)
    return spec.prompts.source, load_prompts(spec.prompts.source), list(spec.prompts.eval)


@pytest.mark.parametrize(
    ("source", "pinned"),
    [
        ("dataset:captions", "dataset:captions@2:train"),
        ("dataset:captions@1:test", "dataset:captions@1:test"),
        ("dataset:objects:train", "dataset:objects@1:train"),
    ],
)
def test_the_stored_spec_pins_the_version_the_job_runs_on(
    harness: Harness, lab: Headers, source: str, pinned: str
) -> None:
    job_id = harness.submit_ok(job_spec(source), headers=lab)
    assert stored_spec(harness, job_id)["prompts"]["source"] == pinned


def test_an_eval_source_is_pinned_as_the_training_source_is(harness: Harness, lab: Headers) -> None:
    job_id = harness.submit_ok(job_spec("builtin:colors", eval_source="dataset:captions@1:test"), headers=lab)
    assert stored_spec(harness, job_id)["prompts"]["eval_source"] == "dataset:captions@1:test"


@pytest.mark.parametrize(
    ("prompts", "field", "says"),
    [
        ({"source": "dataset:nothing"}, "prompts.source", "the team has no dataset 'nothing'"),
        ({"source": "dataset:captions@9"}, "prompts.source", "dataset 'captions' has no version 9"),
        ({"source": "dataset:captions@2:test"}, "prompts.source", "version 2 of dataset 'captions' has no test split"),
        ({"source": "dataset:studio-set"}, "prompts.source", "the team has no dataset 'studio-set'"),
        ({"source": "dataset:edits"}, "prompts.source", "is an edit set, whose images condition flux_kontext"),
        ({"source": "dataset:9lives"}, "prompts.source", "is not dataset:<name>[@<version>][:train|:test]"),
        ({"eval_source": "dataset:edits"}, "prompts.eval_source", "an edit set's eval rows are the test split"),
    ],
)
def test_a_dataset_the_team_does_not_have_is_refused_naming_the_field(
    harness: Harness, lab: Headers, prompts: dict[str, str], field: str, says: str
) -> None:
    studio = harness.add_user(f"sam-{len(field)}-{len(says)}", "studio", "admin")
    uploaded(harness, studio, "studio-set", "text", b"a studio prompt\n") if "studio-set" in str(prompts) else None
    response = harness.submit({"resources": {"device_type": "cpu"}, "prompts": prompts}, headers=lab)
    assert response.status_code == 422, response.text
    assert any(e["field"] == field and says in e["message"] for e in response.json()["detail"]), response.text


def test_the_geneval_reward_on_a_dataset_that_is_not_a_geneval_set_is_refused_naming_prompts_source(
    harness: Harness, lab: Headers
) -> None:
    spec = job_spec("dataset:captions") | {"reward": [{"name": "geneval"}]}
    response = harness.submit(spec, headers=lab)
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["field"] == "prompts.source"
    assert "'dataset:captions' has none: choose a team dataset of format geneval" in error["message"]


def test_the_geneval_reward_on_a_built_in_text_set_is_refused_and_on_a_shapes_set_queued(
    harness: Harness, lab: Headers
) -> None:
    refused = harness.submit(job_spec("builtin:colors") | {"reward": [{"name": "geneval"}]}, headers=lab)
    assert refused.status_code == 422, refused.text
    [error] = refused.json()["detail"]
    assert error["field"] == "prompts.source"
    assert "'builtin:colors' has none: choose a team dataset of format geneval" in error["message"]
    harness.submit_ok(job_spec("builtin:shapes-geneval") | {"reward": [{"name": "geneval"}]}, headers=lab)


def test_the_geneval_reward_on_a_geneval_dataset_is_pinned(harness: Harness, lab: Headers) -> None:
    job_id = harness.submit_ok(job_spec("dataset:objects") | {"reward": [{"name": "geneval"}]}, headers=lab)
    assert stored_spec(harness, job_id)["prompts"]["source"] == "dataset:objects@1:train"


def test_a_worker_on_another_host_fetches_the_pinned_split_and_its_eval_split(
    harness: Harness, lab: Headers, live: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = harness.submit_ok(job_spec("dataset:captions@1", eval_source="dataset:captions@1:test"), headers=lab)
    folder = tmp_path / "worker-host" / "jobs" / str(job_id)
    source, prompts, eval_prompts = on_another_host(harness, live, job_id, folder, monkeypatch)
    assert source == str(folder / "datasets" / "captions@1" / "train.txt")
    assert (prompts, eval_prompts) == (["a cat", "a dog"], ["a bird", "a fish"])


def test_a_fetched_geneval_set_gives_its_prompts(
    harness: Harness, lab: Headers, live: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id = harness.submit_ok(job_spec("dataset:objects"), headers=lab)
    assert on_another_host(harness, live, job_id, tmp_path, monkeypatch)[1] == ["a red car"]


def test_a_fetched_edit_set_gives_each_instruction_with_its_image(
    harness: Harness, lab: Headers, live: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    weights = tmp_path / "kontext"  # a local model folder: the spec checks it exists, nothing loads it here
    weights.mkdir()
    spec = job_spec("dataset:edits") | {"model": {"family": "flux_kontext", "path": str(weights)}}
    job_id = harness.submit_ok(spec, headers=lab)
    [row] = on_another_host(harness, live, job_id, tmp_path / "host", monkeypatch)[1]
    assert row == "make it red" and row.image.read_bytes() == CAT  # type: ignore[attr-defined]
    assert row.image.is_relative_to(tmp_path / "host")  # type: ignore[attr-defined]


def test_bytes_that_do_not_match_the_checksum_are_refused(
    harness: Harness, lab: Headers, live: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    uploaded(harness, lab, "tampered", "text", b"a cat\n")
    with harness.session() as session:
        version = session.query(DatasetVersion).order_by(DatasetVersion.id.desc()).first()
        assert version is not None
        stored = harness.settings.resolved_artifact_root() / "store" / version.store_key
    stored.write_bytes(stored.read_bytes().replace(b"a cat", b"a dog"))
    job_id = harness.submit_ok(job_spec("dataset:tampered"), headers=lab)
    with pytest.raises(FetchFailed, match="did not match sha256"):
        on_another_host(harness, live, job_id, tmp_path, monkeypatch)
    assert not (tmp_path / "datasets" / "tampered@1").exists()


def test_an_evaluation_carries_the_prompts_of_a_dataset_split(harness: Harness, lab: Headers) -> None:
    job_id = checkpointed_job(harness, lab)
    body = {"prompts": "dataset:captions@1:test", "rewards": [{"name": "brightness"}], "step": 5}
    response = harness.client.post(f"/api/v1/jobs/{job_id}/evaluations", json=body, headers=lab)
    assert response.status_code == 201, response.text
    with harness.session() as session:
        task = session.get_one(Job, response.json()["jobs"][0]["id"]).task
    assert task is not None and (task["prompt_set"], task["prompts"]) == (
        "dataset:captions@1:test",
        ["a bird", "a fish"],
    )


def test_an_evaluation_naming_a_dataset_the_team_does_not_have_is_refused(harness: Harness, lab: Headers) -> None:
    job_id = checkpointed_job(harness, lab)
    body = {"prompts": "dataset:captions@2:test", "rewards": [{"name": "brightness"}], "step": 5}
    response = harness.client.post(f"/api/v1/jobs/{job_id}/evaluations", json=body, headers=lab)
    assert response.status_code == 422, response.text
    assert response.json()["detail"] == [
        {"field": "prompts", "message": "version 2 of dataset 'captions' has no test split (train)"}
    ]


def test_a_spec_read_without_fetching_its_dataset_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"'dataset:captions@1:train' is a platform dataset; a job fetches it"):
        load_prompts("dataset:captions@1:train")
