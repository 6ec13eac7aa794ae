"""POST /api/v1/jobs with a forward-process algorithm (DiffusionNFT, AWM, DGPO): the trajectory executors,
whose schedules are built on the rollout's log-probs, are a 422 naming `executor.name` and saying why;
native, which serves both families, is queued, its stored spec holding the resolved KL weight and reading back
as the trainer reads it; a DGPO switch out of range is a 422 naming `algorithm.switch_ema_ref`."""

from __future__ import annotations

import pytest
from server_harness import Harness

from trainer.spec import parse_spec
from trainer.spec.forward_family import FORWARD_ALGORITHMS, FORWARD_UPSTREAM

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


@pytest.mark.parametrize("algorithm", FORWARD_ALGORITHMS)
def test_a_forward_jobs_stored_spec_keeps_its_kl_weight_and_reads_back(harness: Harness, algorithm: str) -> None:
    response = harness.submit({"algorithm": {"name": algorithm}, "executor": {"name": "native"}})
    stored = response.json()["spec"]
    assert stored["algorithm"]["kl_beta"] == FORWARD_UPSTREAM[algorithm].kl_beta
    assert parse_spec(stored).model_dump(mode="json") == stored


def test_a_dgpo_switch_below_zero_is_422_naming_it(harness: Harness) -> None:
    response = harness.submit({"algorithm": {"name": "dgpo", "switch_ema_ref": -1}, "executor": {"name": "native"}})
    assert response.status_code == 422, response.text
    (problem,) = response.json()["detail"]
    assert problem["field"] == "algorithm.switch_ema_ref" and "greater than or equal to 0" in problem["message"]
    assert harness.job_count() == 0
