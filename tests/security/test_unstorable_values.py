"""Fuzz 500s of the live attack round: values the database cannot store (a NUL in text, an integer beyond 64 bits)
reached it, or the JSON encoder, from a request. Each is now a 422 naming the field, with nothing stored, on
SQLite and PostgreSQL (which refuses NUL in text)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from server_harness import Harness, Headers
from sqlalchemy import func, select

from server.models import Advice, Artifact, Experiment
from server.services.artifact_store import confined
from server.services.errors import FieldErrors

HUGE = 2**70


def _fields(response: Any) -> list[str]:
    assert response.status_code == 422, response.text
    return [error["field"] for error in response.json()["detail"]]


def _count(harness: Harness, model: type) -> int:
    with harness.session() as session:
        return session.scalar(select(func.count()).select_from(model)) or 0


@pytest.fixture
def running(db_harness: Harness) -> tuple[int, Headers]:
    """A running job and its token, for the ingestion door."""
    job_id = db_harness.submit_ok({"name": "running"})
    return job_id, db_harness.start_job(job_id)


def test_advise_with_an_integer_beyond_64_bits_in_the_spec_is_422_naming_it(db_harness: Harness) -> None:
    db_harness.add_host("cpu-box", device_type="cpu")
    response = db_harness.client.post("/api/v1/advise", json={"spec": {"seed": HUGE}}, headers=db_harness.admin)
    assert _fields(response) == ["spec.seed"]
    assert (_count(db_harness, Advice), db_harness.job_count()) == (0, 0)


def test_a_memory_budget_beyond_64_bits_is_422_naming_it(db_harness: Harness) -> None:
    db_harness.add_host("cpu-box", device_type="cpu")
    for budget in (HUGE, "9" * 400 + "GiB"):
        response = db_harness.client.post(
            "/api/v1/advise", json={"spec": {}, "memory_budget": budget}, headers=db_harness.admin
        )
        assert _fields(response) == ["memory_budget"], budget
    assert _count(db_harness, Advice) == 0


def test_an_artifact_path_with_a_nul_is_422_naming_path(db_harness: Harness, running: tuple[int, Headers]) -> None:
    job_id, token = running
    artifact = {"attempt": 1, "kind": "checkpoint", "name": "step-1", "step": 1, "path": "checkpoints/\x00step-1"}
    response = db_harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=artifact, headers=token)
    assert _fields(response) == ["path"]
    assert _count(db_harness, Artifact) == 0


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/jobs", {"name": "a\x00b"}, "name"),
        ("/api/v1/jobs", {"model": {"lora_targets": ["to_q\x00"]}}, "model.lora_targets.0"),
        ("/api/v1/experiments", {"name": "e\x00", "spec": {}, "axes": [{"path": "seed", "values": [1, 2]}]}, "name"),
        ("/api/v1/experiments", {"name": "e", "spec": {}, "axes": [{"path": "seed", "values": [HUGE, 2]}]},
         "axes.0.values.0"),
        ("/api/v1/tokens", {"name": "t\x00"}, "name"),
    ],
)  # fmt: skip
def test_a_body_value_the_database_cannot_store_is_422_naming_it(
    db_harness: Harness, path: str, body: dict[str, Any], field: str
) -> None:
    response = db_harness.client.post(path, json=body, headers=db_harness.admin)
    assert _fields(response) == [field]
    assert (db_harness.job_count(), _count(db_harness, Experiment)) == (0, 0)


def test_an_ingested_metric_key_or_artifact_name_with_a_nul_is_422_naming_it(
    db_harness: Harness, running: tuple[int, Headers]
) -> None:
    job_id, token = running
    batch = {"attempt": 1, "steps": [{"step": 1, "wall_time": 1.0, "values": {"lo\x00ss": 0.5}}]}
    metric = db_harness.client.post(f"/api/v1/ingest/{job_id}/metrics", json=batch, headers=token)
    artifact = {"attempt": 1, "kind": "checkpoint", "name": "st\x00ep", "step": 1, "path": "checkpoints/step-1"}
    named = db_harness.client.post(f"/api/v1/ingest/{job_id}/artifacts", json=artifact, headers=token)
    assert (_fields(metric), _fields(named)) == (["steps.0.values"], ["name"])


def test_a_query_value_with_a_nul_is_422_naming_the_parameter(db_harness: Harness) -> None:
    response = db_harness.client.get("/api/v1/jobs", params={"name": "a\x00"}, headers=db_harness.admin)
    assert _fields(response) == ["name"]


def test_confining_a_path_with_a_nul_is_a_field_error_not_a_crash(tmp_path: Path) -> None:
    with pytest.raises(FieldErrors) as refused:
        confined(tmp_path, "checkpoints/\x00step-1", field="path")
    assert [error["field"] for error in refused.value.detail] == ["path"]


@pytest.mark.parametrize("value", [str(2**64), str(-(2**63) - 1), "9" * 5000])
def test_a_query_integer_beyond_64_bits_is_422_naming_the_parameter(db_harness: Harness, value: str) -> None:
    job_id = db_harness.submit_ok({"name": "listed"})
    url = f"/api/v1/jobs/{job_id}/samples"
    assert _fields(db_harness.client.get(url, params={"offset": value}, headers=db_harness.admin)) == ["offset"]
