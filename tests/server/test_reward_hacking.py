"""The reward-hacking alarm (docs/evaluation.md): it fires on a job whose training reward keeps rising while a
held-out reward falls by more than the threshold over N evaluations, is recorded and told to the team's webhooks
once, and stays quiet on the shapes demo as it really logs.

The jobs' metrics, eval samples and evaluation reports go through the real ingest API, as a trainer sends them.
The overfitting job's figures are made up rather than trained (a real run and its checkpoints' evaluations take
minutes of CPU on this machine, per docs/evaluation.md's measurement); the demo's are a real run's
(fixtures/shapes_demo_run.json).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from server_harness import Harness, Headers, png_bytes
from sqlalchemy import select

from server.models import JobStatus, WebhookDelivery
from server.schemas.evaluations import StepSeries
from server.services.reward_hacking import first_firing

DEMO_RUN = Path(__file__).parent / "fixtures" / "shapes_demo_run.json"
HELD_OUT = "builtin:shapes-heldout · prompt_color_match"


def add_webhook(harness: Harness, headers: Headers) -> None:
    team_id = harness.client.get("/api/v1/teams", headers=headers).json()["items"][0]["id"]
    response = harness.client.post(
        f"/api/v1/teams/{team_id}/webhooks", json={"url": "https://hooks.example.com/x"}, headers=headers
    )
    assert response.status_code == 201, response.text


def alarm_deliveries(harness: Harness) -> list[dict]:
    with harness.session() as session:
        rows = session.scalars(select(WebhookDelivery).where(WebhookDelivery.event == "job.reward_hacking"))
        return [json.loads(d.body) for d in rows]


def post_metrics(harness: Harness, job_id: int, token: Headers, reward_mean: dict[int, float]) -> None:
    steps = [{"step": s, "wall_time": 1.0e9 + s, "values": {"reward/mean": v}} for s, v in sorted(reward_mean.items())]
    response = harness.client.post(
        f"/api/v1/ingest/{job_id}/metrics", json={"attempt": 1, "steps": steps}, headers=token
    )
    assert response.status_code == 200, response.text


def post_eval_sample(
    harness: Harness, job_id: int, token: Headers, step: int, prompt: str, seed: int, reward: float
) -> None:
    form = {
        "attempt": "1",
        "step": str(step),
        "kind": "eval",
        "prompt": prompt,
        "seed": str(seed),
        "reward": repr(reward),
    }
    files = {"image": ("sample.png", png_bytes(), "image/png")}
    response = harness.client.post(f"/api/v1/ingest/{job_id}/samples", data=form, files=files, headers=token)
    assert response.status_code == 201, response.text


def alarm(harness: Harness, job_id: int, headers: Headers) -> dict:
    response = harness.client.get(f"/api/v1/jobs/{job_id}/reward-hacking", headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def overfitting_job(harness: Harness, headers: Headers) -> tuple[int, Headers]:
    """Training reward/mean rising every step from 0.40 (steps 1..30) while the eval prompts' reward falls from
    0.60 by 0.03 per eval step (every 5 steps): a model that pleases its reward and loses the held-out prompts."""
    job_id = harness.submit_ok({"name": "overfit", "samples": {"every": 5, "count": 2}}, headers)
    token = harness.start_job(job_id)
    for step in range(0, 31, 5):
        if step:
            post_metrics(harness, job_id, token, {s: 0.40 + 0.01 * s for s in range(step - 4, step + 1)})
        for seed in (0, 1):
            post_eval_sample(harness, job_id, token, step, "a red apple", seed, 0.60 - 0.006 * step)
    return job_id, token


def test_the_alarm_fires_on_a_job_whose_training_reward_rises_while_its_eval_reward_falls(
    harness: Harness, lab: Headers
) -> None:
    add_webhook(harness, lab)
    job_id, _ = overfitting_job(harness, lab)
    shown = alarm(harness, job_id, lab)
    assert shown["fired"] and shown["series"] == "in-training eval"
    # The first window of N = 3 evaluations with a training reward: steps 5, 10, 15 (step 0 has none).
    assert (shown["first_step"], shown["last_step"]) == (5, 15)
    assert shown["held_out_drop"] == pytest.approx(0.06) and shown["training_rise"] == pytest.approx(0.10)
    [told] = alarm_deliveries(harness)
    assert (
        told["job_id"] == job_id
        and "reward hacking" in told["text"]
        and told["urls"]["job"].endswith(f"/jobs/{job_id}")
    )


def test_the_alarm_is_told_once_per_job_however_often_it_is_read_and_checked(harness: Harness, lab: Headers) -> None:
    add_webhook(harness, lab)
    job_id, _ = overfitting_job(harness, lab)
    for _ in range(3):
        alarm(harness, job_id, lab)
    harness.finish_job(job_id, JobStatus.SUCCEEDED)
    assert len(alarm_deliveries(harness)) == 1


def test_the_jobs_list_marks_the_job_that_raised_the_alarm(harness: Harness, lab: Headers) -> None:
    job_id, _ = overfitting_job(harness, lab)
    quiet = harness.submit_ok({"name": "quiet"}, lab)
    items = {j["id"]: j["reward_hacking"] for j in harness.client.get("/api/v1/jobs", headers=lab).json()["items"]}
    assert items == {job_id: True, quiet: False}


def test_the_alarm_stays_quiet_on_the_shapes_demo_as_it_really_logs(harness: Harness, lab: Headers) -> None:
    add_webhook(harness, lab)
    run = json.loads(DEMO_RUN.read_text())
    job_id = harness.submit_ok({"name": "shapes-demo", "samples": {"every": 5, "count": 2}}, lab)
    token = harness.start_job(job_id)
    post_metrics(harness, job_id, token, {int(s): v for s, v in run["reward_mean"].items()})
    for evaluation in run["eval_samples"]:
        for sample in evaluation["samples"]:
            post_eval_sample(
                harness, job_id, token, evaluation["step"], sample["prompt"], sample["seed"], sample["reward"]
            )
    harness.finish_job(job_id, JobStatus.SUCCEEDED)
    shown = alarm(harness, job_id, lab)
    assert not shown["fired"] and alarm_deliveries(harness) == []
    assert shown["held_out"][0]["steps"] == [0, 5, 10, 15, 20, 25, 30]


def test_the_alarm_fires_on_a_held_out_evaluation_of_the_checkpoints(harness: Harness, lab: Headers) -> None:
    job_id = harness.submit_ok({"name": "overfit", "samples": {"every": 5, "count": 0}}, lab)
    token = harness.start_job(job_id)
    post_metrics(harness, job_id, token, {s: 0.40 + 0.01 * s for s in range(1, 31)})
    for step in (10, 20, 30):
        artifact = {
            "attempt": 1,
            "kind": "checkpoint",
            "name": f"step-{step}",
            "step": step,
            "path": f"checkpoints/step-{step}",
        }
        assert (
            harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=artifact, headers=token).status_code == 201
        )
    harness.finish_job(job_id, JobStatus.SUCCEEDED)
    body = {"prompts": "builtin:shapes-heldout", "rewards": [{"name": "prompt_color_match"}], "all_checkpoints": True}
    queued = harness.client.post(f"/api/v1/jobs/{job_id}/evaluations", json=body, headers=lab)
    assert queued.status_code == 201, queued.text
    assert not alarm(harness, job_id, lab)["fired"]
    for eval_job, held_out in zip([j["id"] for j in queued.json()["jobs"]], (0.55, 0.52, 0.50), strict=True):
        eval_token = harness.start_job(eval_job)
        scores = {"name": "prompt_color_match", "scores": [held_out, held_out]}
        report = {"attempt": 1, "prompts": ["a", "b"], "seeds_per_prompt": 1, "rewards": [scores]}
        assert (
            harness.client.post(f"/api/v1/ingest/{eval_job}/evaluation", json=report, headers=eval_token).status_code
            == 204
        )
    shown = alarm(harness, job_id, lab)
    assert shown["fired"] and shown["series"] == HELD_OUT and (shown["first_step"], shown["last_step"]) == (10, 30)


def _series(values: list[float]) -> StepSeries:
    return StepSeries(key="held out", steps=[5 * (i + 1) for i in range(len(values))], values=values)


def test_a_held_out_fall_of_exactly_the_threshold_does_not_fire() -> None:
    training = {5: 0.1, 10: 0.2, 15: 0.3}
    assert first_firing(training, _series([1.0, 0.875, 0.75]), 3, 0.25) is None  # binary fractions: exactly 0.25
    assert first_firing(training, _series([1.0, 0.875, 0.625]), 3, 0.25) is not None


def test_a_training_reward_that_stops_rising_does_not_fire() -> None:
    assert first_firing({5: 0.1, 10: 0.3, 15: 0.3}, _series([0.5, 0.4, 0.3]), 3, 0.02) is None
