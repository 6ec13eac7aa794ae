"""`POST /api/v1/jobs/{id}/evaluations` queues an eval task job per checkpoint asked for (one, all, or the base
model) with a built-in prompt set or an uploaded file, checked before anything is queued; the eval trainer's scores
come back through `POST /api/v1/ingest/{id}/evaluation`, and the platform computes each reward's figures once."""

from __future__ import annotations

import json
from typing import Any

import pytest
from server_harness import Harness, Headers
from test_exports_api import _checkpointed_job as checkpointed_job

from server.models import Evaluation, Job
from server.states import JobKind

REWARDS = [{"name": "orange_background"}, {"name": "prompt_color_match"}]


def evaluate(harness: Harness, job_id: int, headers: Headers, **body: Any) -> Any:
    body = {"prompts": "builtin:shapes-heldout", "rewards": REWARDS} | body
    return harness.client.post(f"/api/v1/jobs/{job_id}/evaluations", json=body, headers=headers)


def queued_ids(response: Any) -> list[int]:
    assert response.status_code == 201, response.text
    return [job["id"] for job in response.json()["jobs"]]


def report(harness: Harness, eval_id: int, body: dict[str, Any]) -> Any:
    token = harness.start_job(eval_id)
    return harness.client.post(f"/api/v1/ingest/{eval_id}/evaluation", json=body, headers=token)


def test_an_evaluation_is_an_eval_task_job_scoring_the_rewards_asked_on_the_checkpoint(
    harness: Harness, lab: Headers
) -> None:
    job_id = checkpointed_job(harness, lab)
    [eval_id] = queued_ids(evaluate(harness, job_id, lab, step=5, seeds_per_prompt=2))
    with harness.session() as session:
        job = session.get_one(Job, eval_id)
        assert (job.kind, job.devices, job.executor) == (JobKind.EVAL, 1, "native")
        assert [r["name"] for r in job.spec["reward"]] == ["orange_background", "prompt_color_match"]
        assert job.task is not None
        assert (job.task["prompt_set"], job.task["prompts"], job.task["seeds_per_prompt"]) == (
            "builtin:shapes-heldout",
            [],
            2,
        )
        assert job.task["source"]["step"] == 5 and job.task["source"]["artifact_id"] == job.source_artifact_id
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/evaluations", headers=lab).json()["items"]
    assert (listed["job_id"], listed["step"], listed["status"], listed["rewards"]) == (eval_id, 5, "queued", [])


def test_all_checkpoints_queue_one_job_each_and_the_base_model_one_without_a_source(
    harness: Harness, lab: Headers
) -> None:
    job_id = checkpointed_job(harness, lab, steps=(5, 10, 15))
    assert len(queued_ids(evaluate(harness, job_id, lab, all_checkpoints=True))) == 3
    [base_id] = queued_ids(evaluate(harness, job_id, lab, base_model=True))
    with harness.session() as session:
        base = session.get_one(Job, base_id)
        assert base.task is not None and base.task["source"] is None and base.source_artifact_id is None
    steps = [e["step"] for e in harness.client.get(f"/api/v1/jobs/{job_id}/evaluations", headers=lab).json()["items"]]
    assert steps == [None, 5, 10, 15]


@pytest.mark.parametrize(
    ("name", "content", "prompts"),
    [
        ("flow_grpo.txt", "a red apple\n\na blue car\n", ["a red apple", "a blue car"]),
        (
            "geneval.jsonl",
            '{"prompt": "a red apple", "tag": "color"}\n{"prompt": "a blue car"}\n',
            ["a red apple", "a blue car"],
        ),
    ],
)
def test_an_uploaded_prompt_file_travels_in_the_task(
    harness: Harness, lab: Headers, name: str, content: str, prompts: list[str]
) -> None:
    job_id = checkpointed_job(harness, lab)
    body = {"prompts": None, "prompt_file": {"name": name, "content": content}}
    [eval_id] = queued_ids(evaluate(harness, job_id, lab, **body))
    with harness.session() as session:
        task = session.get_one(Job, eval_id).task
        assert task is not None and (task["prompt_set"], task["prompts"]) == (name, prompts)


@pytest.mark.parametrize(
    ("body", "field", "says"),
    [
        ({"prompts": None, "prompt_file": {"name": "p.jsonl", "content": '{"prompt": "ok"}\n{"text": "x"}\n'}},
         "prompt_file.content", "line 2"),
        ({"prompts": None, "prompt_file": {"name": "p.jsonl", "content": '{"prompt": "ok"}\n\nnot json\n'}},
         "prompt_file.content", "line 3, column 1: not JSON"),
        ({"prompts": None, "prompt_file": {"name": "p.txt", "content": "a\nb\nc\nd\n"}},
         "prompt_file.content", "line 4, column 1: over the limit of 3 prompts"),
        ({"prompts": None, "prompt_file": {"name": "p.txt", "content": "x" * 2000}},
         "prompt_file.content", "over the limit"),
        ({"prompts": None, "prompt_file": {"name": "p.csv", "content": "a\n"}}, "prompt_file.name", ".txt or .jsonl"),
        ({"prompts": "builtin:nope"}, "prompts", "builtin:shapes-heldout"),
        ({"rewards": [{"name": "no_such_reward"}]}, "rewards.0", "no_such_reward"),
        ({"step": 7}, "step", "its steps: 5, 10"),
        ({"step": 5, "base_model": True}, "step", "one of"),
    ],
)  # fmt: skip
def test_a_bad_request_is_a_422_naming_the_field_and_queues_nothing(
    harness: Harness, lab: Headers, body: dict[str, Any], field: str, says: str
) -> None:
    limits = harness.client.app.state.settings  # type: ignore[attr-defined]
    limits.max_eval_prompts, limits.max_eval_prompt_bytes = 3, 1000
    job_id = checkpointed_job(harness, lab)
    before = harness.job_count()
    response = evaluate(harness, job_id, lab, **body)
    assert response.status_code == 422, response.text
    errors = response.json()["detail"]
    assert any(e["field"].startswith(field) and says in e["message"] for e in errors), errors
    assert harness.job_count() == before


def test_an_image_family_s_job_is_a_422_naming_prompts_and_queues_nothing(harness: Harness, lab: Headers) -> None:
    """A FLUX.1 Kontext job edits each prompt row's image: an evaluation's text prompts cannot draw from it."""
    job_id = checkpointed_job(harness, lab, family="flux_kontext")
    before = harness.job_count()
    response = evaluate(harness, job_id, lab)
    assert response.status_code == 422, response.text
    assert [error["field"] for error in response.json()["detail"]] == ["prompts"]
    assert harness.job_count() == before


def test_the_platform_computes_each_rewards_figures_from_the_reported_scores(harness: Harness, lab: Headers) -> None:
    job_id = checkpointed_job(harness, lab)
    [eval_id] = queued_ids(evaluate(harness, job_id, lab, step=10, seeds_per_prompt=2))
    scores = {"name": "orange_background", "scores": [0.2, 0.4, 0.6, 1.0]}
    body = {"attempt": 1, "prompts": ["p one", "p two"], "seeds_per_prompt": 2, "rewards": [scores]}
    assert report(harness, eval_id, body).status_code == 204
    [listed] = harness.client.get(f"/api/v1/jobs/{job_id}/evaluations", headers=lab).json()["items"]
    shown = harness.client.get(f"/api/v1/evaluations/{listed['id']}", headers=lab).json()
    [figures] = shown["rewards"]
    assert figures["n"] == 4 and figures["mean"] == pytest.approx(0.55)
    assert figures["std"] == pytest.approx(((0.35**2 + 0.15**2 + 0.05**2 + 0.45**2) / 4) ** 0.5)
    assert shown["prompts"] == [
        {"prompt": "p one", "scores": {"orange_background": pytest.approx(0.3)}},
        {"prompt": "p two", "scores": {"orange_background": pytest.approx(0.8)}},
    ]
    curve = harness.client.get(f"/api/v1/jobs/{job_id}/evaluations/curve", headers=lab).json()
    assert curve["series"] == [
        {"key": "builtin:shapes-heldout · orange_background", "steps": [10], "values": [pytest.approx(0.55)]}
    ]


def test_a_report_with_a_score_missing_is_refused_and_stores_nothing(harness: Harness, lab: Headers) -> None:
    job_id = checkpointed_job(harness, lab)
    [eval_id] = queued_ids(evaluate(harness, job_id, lab, step=10))
    body = {"attempt": 1, "prompts": ["a", "b"], "seeds_per_prompt": 1, "rewards": [{"name": "r", "scores": [1.0]}]}
    assert report(harness, eval_id, body).status_code == 422
    with harness.session() as session:
        evaluation = session.query(Evaluation).filter_by(job_id=eval_id).one()
        assert evaluation.reported_at is None and evaluation.rewards == []


def test_only_an_evaluation_job_may_report_an_evaluation(harness: Harness, lab: Headers) -> None:
    job_id = harness.submit_ok(headers=lab)
    token = harness.start_job(job_id)
    body = {"attempt": 1, "prompts": ["a"], "seeds_per_prompt": 1, "rewards": [{"name": "r", "scores": [1.0]}]}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/evaluation", json=body, headers=token)
    assert response.status_code == 409, response.text


def test_another_teams_job_cannot_be_evaluated_or_read(harness: Harness, lab: Headers, studio: Headers) -> None:
    job_id = checkpointed_job(harness, lab)
    assert evaluate(harness, job_id, studio, step=5).status_code == 404
    for path in ("evaluations", "evaluations/curve", "reward-hacking"):
        assert harness.client.get(f"/api/v1/jobs/{job_id}/{path}", headers=studio).status_code == 404
    assert json.loads(harness.client.get(f"/api/v1/jobs/{job_id}/evaluations", headers=lab).text)["items"] == []


def test_a_model_version_is_evaluated_on_its_checkpoint_and_lists_its_own_evaluations(
    harness: Harness, lab: Headers, studio: Headers
) -> None:
    job_id = checkpointed_job(harness, lab)
    registered = harness.client.post(
        "/api/v1/models", json={"name": "shapes", "job_id": job_id, "step": 5}, headers=lab
    )
    assert registered.status_code == 201, registered.text
    path = "/api/v1/models/shapes/versions/1/evaluations"
    body = {"prompts": "builtin:shapes-heldout", "rewards": REWARDS}
    [eval_id] = queued_ids(harness.client.post(path, json=body, headers=lab))
    queued_ids(evaluate(harness, job_id, lab, step=10))  # another checkpoint's: not the version's
    with harness.session() as session:
        task = session.get_one(Job, eval_id).task
        assert task is not None and (task["source"]["job_id"], task["source"]["step"]) == (job_id, 5)
    [listed] = harness.client.get(path, headers=lab).json()["items"]
    assert (listed["job_id"], listed["step"]) == (eval_id, 5)
    assert harness.client.post(path, json=body | {"step": 10}, headers=lab).status_code == 422
    assert harness.client.get(path, headers=studio).status_code == 404
