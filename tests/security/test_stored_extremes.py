"""Attack 7, the read side: whatever numbers are stored (NaN, ±inf, the largest values a column holds), every
page and API read of them answers 200 (a wall time of inf made the compare page and metrics.json answer 500).

The values are written straight into the database, past ingestion's checks, as a bug or an older server could
have left them."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest
from dataset_support import uploaded
from fastapi.routing import APIRoute
from security_support import login_with_token
from server_harness import Harness, png_bytes
from sqlalchemy import select, update
from uploaded_artifacts import upload

from server.models import Allocation, Artifact, Device, Evaluation, EvaluationReward, Job, RewardService, Sample, utcnow
from server.schemas.common import MAX_INT32
from server.services import metric_blocks
from server.services.current_points import record_first_step

MAX_INT64 = 2**63 - 1
# Reads that answer other than 200 whatever is stored: / sends to the jobs page, and the first-password page
# without its one-time code is a bad link.
EXPECTED_STATUS = {"/": 303, "/setup-password": 400}
POISONS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "huge": 1e308, "-huge": -1e308}


def _get_routes(routes: list[Any], prefix: str = "") -> Iterator[tuple[str, APIRoute]]:
    for route in routes:
        if hasattr(route, "original_router"):
            yield from _get_routes(route.original_router.routes, prefix + route.include_context.prefix)
        elif isinstance(route, APIRoute) and "GET" in route.methods:
            yield prefix + route.path, route


def _poison(harness: Harness, job_id: int, sample_id: int, value: float) -> None:
    """Every numeric column a job's (and its experiment's, and a reward service's) pages and reads show, set to
    `value` (or the largest integer it holds)."""
    first_finite, last_finite = np.zeros(3, dtype=metric_blocks.POINT), np.zeros(3, dtype=metric_blocks.POINT)
    first_finite["step"] = last_finite["step"] = [1, 2, MAX_INT32]
    first_finite["value"], first_finite["wall"] = [0.5, value, value], [1.0, value, value]
    last_finite["value"], last_finite["wall"] = [value, value, 0.5], [value, value, 1.0]
    by_key = {"loss": first_finite, "reward/mean": last_finite, "throughput/samples_per_s": first_finite}
    with harness.session() as session:
        session.execute(
            update(Job)
            .where(Job.id == job_id)
            .values(
                last_reward=value,
                step=MAX_INT32,
                total_steps=1,
                priority=MAX_INT32,
                max_attempts=MAX_INT32,
                devices=MAX_INT32,
                nodes=MAX_INT32,
            )
        )
        session.execute(
            update(Sample)
            .where(Sample.id == sample_id)
            .values(reward=value, seed=MAX_INT64, width=MAX_INT32, height=MAX_INT32, step=MAX_INT32)
        )
        session.execute(update(Artifact).where(Artifact.job_id == job_id).values(size_bytes=MAX_INT64, step=MAX_INT32))
        session.execute(update(Device).values(memory_bytes=MAX_INT64))
        session.execute(update(Allocation).where(Allocation.job_id == job_id).values(exit_code=MAX_INT32))
        count = value if math.isfinite(value) or session.bind.dialect.name == "sqlite" else None  # no NaN in json
        scrape = {"launch": 1, "scraped_at": "2026-11-30T12:00:00", "requests": MAX_INT64, "images": count,
                  "errors": MAX_INT64, "latency_buckets": [["0.1", count], ["+Inf", count]]}  # fmt: skip
        session.execute(
            update(RewardService).values(metrics=scrape, recent_metrics=[scrape | {"scraped_at": "2026-11-30"}])
        )
        record_first_step(session, job_id, 1, 1)
        metric_blocks.store(session, job_id, 1, metric_blocks.BatchPoints(by_key))
        session.commit()


def _poisoned_evaluation(harness: Harness, job_id: int, value: float) -> int:
    """An evaluation of the job's (latest) checkpoint whose stored figures are `value`; its id."""
    body = {"prompts": "builtin:shapes-heldout", "rewards": [{"name": "brightness"}]}
    queued = harness.client.post(f"/api/v1/jobs/{job_id}/evaluations", json=body, headers=harness.admin)
    assert queued.status_code == 201, queued.text
    with harness.session() as session:
        evaluation = session.scalars(select(Evaluation).where(Evaluation.source_job_id == job_id)).one()
        in_json = value if math.isfinite(value) or session.bind.dialect.name == "sqlite" else 0.5  # no NaN in json
        evaluation.rewards.append(
            EvaluationReward(name="brightness", mean=value, std=value, n=MAX_INT32, per_prompt=[in_json])
        )
        evaluation.prompts, evaluation.reported_at, evaluation.step = ["p"], utcnow(), MAX_INT32
        session.commit()
        return evaluation.id


def _urls(
    harness: Harness, job_id: int, sample_id: int, other_id: int, experiment_id: int, artifact_id: int,
    evaluation_id: int,
) -> list[str]:  # fmt: skip
    fill = {"job_id": job_id, "sample_id": sample_id, "team_id": 1, "user_id": 1, "experiment_id": experiment_id}
    fill |= {"artifact_id": artifact_id, "evaluation_id": evaluation_id}
    fill |= {"service_id": 1, "advice_id": 1, "webhook_id": 1}
    fill |= {"model_name": "extremes", "version": 1, "alias": "production", "dataset_name": "extremes"}
    query = {"walls": "1", "keys": "loss", "key": "loss", "job": str(job_id), "jobs": f"{job_id},{other_id}"}
    urls = []
    for path, route in _get_routes(harness.client.app.routes):
        url = re.sub(r"\{(\w+)\}", lambda m: str(fill[m.group(1)]), path)
        params = [f"{q.name}={query[q.name]}" for q in route.dependant.query_params if q.name in query]
        urls.append(url + ("?" + "&".join(params) if params else ""))
    compare = f"/compare?job={job_id}&job={other_id}"
    return [*urls, compare, f"{compare}&axis=time", f"/compare/gallery?job={job_id}&job={other_id}"]


@pytest.mark.parametrize("poison", POISONS)
def test_every_read_answers_200_whatever_numbers_are_stored(db_harness: Harness, poison: str) -> None:
    if poison == "nan" and "sqlite" in db_harness.settings.resolved_database_url():
        pytest.skip("SQLite stores NaN as NULL")
    harness = db_harness
    harness.add_host("gpu-1", "cpu", count=1)
    body = {"name": "extremes", "spec": {"name": "extremes"}, "axes": [{"path": "seed", "values": [1, 2]}]}
    experiment = harness.client.post("/api/v1/experiments", json=body, headers=harness.admin).json()
    job_id, other_id = (cell["job_id"] for cell in experiment["cells"])
    service = {"name": "bright", "reward": "brightness", "device_type": "cpu"}
    assert harness.client.post("/api/v1/services", json=service, headers=harness.admin).status_code == 201
    advise = {"spec": {"name": "extremes"}, "memory_budget": "1GiB"}
    assert harness.client.post("/api/v1/advise", json=advise, headers=harness.admin).status_code == 202
    webhook = {"url": "https://hooks.example.com/sfumato"}
    assert harness.client.post("/api/v1/teams/1/webhooks", json=webhook, headers=harness.admin).status_code == 201
    token = harness.start_job(job_id)
    files = {"image": ("s.png", png_bytes(), "image/png")}
    form = {"attempt": "1", "step": "1", "kind": "eval", "prompt": "p", "seed": "1"}
    sample = harness.client.post(f"/api/v1/ingest/{job_id}/samples", data=form, files=files, headers=token)
    artifact = {"attempt": 1, "kind": "checkpoint", "name": "c", "step": 1, "path": "checkpoints/c"}
    registered_artifact = harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=artifact, headers=token)
    assert registered_artifact.status_code == 201
    artifact_id = int(registered_artifact.json()["id"])
    upload(harness, job_id, artifact_id, token, b"weights")
    sample_id = int(sample.json()["id"])
    _poison(harness, job_id, sample_id, POISONS[poison])
    model = {"name": "extremes", "job_id": job_id}
    registered = harness.client.post("/api/v1/models", json=model, headers=harness.admin)
    assert registered.status_code == 201, registered.text
    evaluation_id = _poisoned_evaluation(harness, job_id, POISONS[poison])
    edit_row = b'{"prompt": "make it red", "image": "images/a.png"}\n'  # an edit set: its preview has an image
    uploaded(harness, harness.admin, "extremes", "edit", edit_row, images={"images/a.png": png_bytes()})
    assert login_with_token(harness, harness.admin) == 303
    failures: dict[str, object] = {}
    for url in _urls(harness, job_id, sample_id, other_id, experiment["id"], artifact_id, evaluation_id):
        try:
            status = harness.client.get(url, headers=harness.admin, follow_redirects=False).status_code
        except Exception as exc:  # the app's own crash, re-raised by the test client
            status = repr(exc)
        if status != EXPECTED_STATUS.get(url, 200):
            failures[url] = status
    assert failures == {}
