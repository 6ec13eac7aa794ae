"""An evaluation under the geneval reward scores what GenEval would: on a team dataset of format geneval the eval
task fetches the pinned version with its job token and gives the reward each prompt's row (the known-output tiny
YOLOS of tests/trainer/test_geneval_detector.py finds one dog at the top left whatever the image, so "a photo of a
dog" passes every check); a prompt set without GenEval metadata is refused at submit naming its field, and a task
whose prompt has no row is a spec error, never a silent 0."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dataset_support import module_platform, served, uploaded
from server_harness import Harness, Headers
from test_exports_api import _checkpointed_job as checkpointed_job

from server.models import Job
from tests.trainer.test_geneval_detector import DOG, SURE, save_detector
from tests.trainer.test_model_rewards import save_tiny_clip
from trainer.__main__ import main


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory, migrated_templates: dict[str, str]) -> Iterator[Harness]:
    roots = [str(tmp_path_factory.getbasetemp())]  # where the detector and CLIP folders lie
    yield from module_platform(tmp_path_factory.mktemp("server-host"), migrated_templates["sqlite"], path_roots=roots)


@pytest.fixture(scope="module")
def lab(harness: Harness) -> Headers:
    harness.add_host("cpu-1", device_type="cpu")
    headers = harness.add_user("gina", "lab", "admin")
    uploaded(harness, headers, "dogs", "geneval", json.dumps(DOG).encode())
    uploaded(harness, headers, "captions", "text", b"a photo of a dog\n")
    return headers


@pytest.fixture(scope="module")
def geneval(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    root = tmp_path_factory.mktemp("geneval-models")
    detector, clip = save_detector(root / "dog", 1, SURE), save_tiny_clip(root / "clip")
    return {"name": "geneval", "path": str(detector), "clip_path": str(clip)}


@pytest.fixture(scope="module")
def live(harness: Harness) -> Iterator[str]:
    """The app served over real HTTP, as the eval job's host reaches the platform."""
    yield from served(harness)


def evaluate(harness: Harness, headers: Headers, reward: dict[str, str], **body: Any) -> tuple[int, Any]:
    """(the evaluated training job, the answer to POST .../evaluations of its base model)."""
    job_id = checkpointed_job(harness, headers)
    body = {"rewards": [reward], "base_model": True} | body
    return job_id, harness.client.post(f"/api/v1/jobs/{job_id}/evaluations", json=body, headers=headers)


def run_eval_task(harness: Harness, eval_id: int, host: Path, live: str, monkeypatch: pytest.MonkeyPatch) -> int:
    """The eval job's trainer on a host whose folder is not the server's, reaching the platform with its token."""
    token = harness.start_job(eval_id)["Authorization"].removeprefix("Bearer ")
    monkeypatch.setenv("SFUMATO_API_URL", live)
    monkeypatch.setenv("SFUMATO_JOB_TOKEN", token)
    monkeypatch.setenv("SFUMATO_JOB_ID", str(eval_id))
    monkeypatch.setenv("SFUMATO_HOME", str(host / "home"))
    with harness.session() as session:
        job = session.get_one(Job, eval_id)
        spec, task = dict(job.spec), job.task
    host.mkdir(parents=True)
    (host / "task.json").write_text(json.dumps(task))
    (host / "spec.json").write_text(json.dumps(spec))
    argv = ["task", "--spec", str(host / "spec.json"), "--task", str(host / "task.json")]
    return main([*argv, "--output-dir", str(host / "out")])


def test_an_evaluation_on_a_geneval_dataset_scores_each_prompt_against_its_row(
    harness: Harness, lab: Headers, geneval: dict[str, str], live: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    job_id, response = evaluate(harness, lab, geneval, prompts="dataset:dogs", seeds_per_prompt=2)
    assert response.status_code == 201, response.text
    [eval_id] = [job["id"] for job in response.json()["jobs"]]
    assert run_eval_task(harness, eval_id, tmp_path / "eval-host", live, monkeypatch) == 0
    assert (tmp_path / "eval-host" / "out" / "datasets" / "dogs@1" / "train_metadata.jsonl").is_file()
    [evaluation] = harness.client.get(f"/api/v1/jobs/{job_id}/evaluations", headers=lab).json()["items"]
    assert [(reward["name"], reward["mean"], reward["n"]) for reward in evaluation["rewards"]] == [("geneval", 1.0, 2)]


@pytest.mark.parametrize(
    ("prompt_set", "field", "named"),
    [
        ({"prompts": "dataset:captions"}, "prompts", "'dataset:captions@1:train' has none"),
        ({"prompts": "builtin:colors"}, "prompts", "'builtin:colors' has none"),
        ({"prompt_file": {"name": "dogs.txt", "content": "a photo of a dog\n"}}, "prompt_file", "'dogs.txt' has none"),
    ],
)
def test_the_geneval_reward_on_a_set_without_metadata_rows_is_refused_naming_the_set(
    harness: Harness, lab: Headers, geneval: dict[str, str], prompt_set: dict[str, Any], field: str, named: str
) -> None:
    job_id, response = evaluate(harness, lab, geneval, **prompt_set)
    assert response.status_code == 422, response.text
    [error] = response.json()["detail"]
    assert error["field"] == field and named in error["message"] and "format geneval" in error["message"]
    assert harness.client.get(f"/api/v1/jobs/{job_id}/evaluations", headers=lab).json()["items"] == []


def test_the_geneval_reward_on_a_shapes_set_is_queued(harness: Harness, lab: Headers, geneval: dict[str, str]) -> None:
    """Every shapes caption has its own GenEval row (trainer/shapes_geneval_prompts.py)."""
    _, response = evaluate(harness, lab, geneval, prompts="builtin:shapes-heldout")
    assert response.status_code == 201, response.text
