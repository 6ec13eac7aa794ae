"""POST /api/v1/jobs with a forward-process algorithm (DiffusionNFT, AWM, DGPO): the trajectory executors,
whose schedules are built on the rollout's log-probs, are a 422 naming `executor.name` and saying why;
native, which serves both families, is queued."""

from __future__ import annotations

import pytest
from server_harness import Harness

from trainer.spec.forward_family import FORWARD_ALGORITHMS

REFUSED = [
    ("diffusion_nft", "lean_retain"),
    ("awm", "lean_reweight"),
    ("dgpo", "jagg"),
    ("diffusion_nft", "digenrl"),
]


@pytest.fixture
def migrated_database_url(migrated_sqlite_url: str) -> str:
    """SQLite only: spec validation happens before any SQL that differs between databases."""
    return migrated_sqlite_url


@pytest.mark.parametrize(("algorithm", "executor"), REFUSED, ids=[f"{a}-{e}" for a, e in REFUSED])
def test_a_trajectory_executor_for_a_forward_algorithm_is_422_naming_executor_name(
    harness: Harness, algorithm: str, executor: str
) -> None:
    response = harness.submit({"algorithm": {"name": algorithm}, "executor": {"name": executor}})
    assert response.status_code == 422, response.text
    (problem,) = response.json()["detail"]
    assert problem["field"] == "executor.name"
    assert "trajectory log-probs" in problem["message"] and problem["message"].endswith("allowed: native")
    assert harness.job_count() == 0


@pytest.mark.parametrize("algorithm", FORWARD_ALGORITHMS)
def test_a_forward_algorithm_under_native_is_queued(harness: Harness, algorithm: str) -> None:
    response = harness.submit({"algorithm": {"name": algorithm}, "executor": {"name": "native"}})
    assert response.status_code == 201, response.text
    assert response.json()["spec"]["algorithm"]["name"] == algorithm
