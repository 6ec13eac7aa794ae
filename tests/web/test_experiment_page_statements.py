"""How many SQL statements the experiment page and its summary poll send for a 3 x 3 experiment: a fixed few,
with the summary computed once per request, whatever the number of cells."""

from __future__ import annotations

import pytest
from experiment_fixtures import seed_experiment
from fastapi import FastAPI
from fastapi.testclient import TestClient
from page_fixtures import World
from statement_count import statements

EXECUTORS = ["native", "lean_retain", "jagg"]
SEEDS = [1, 2, 3]
PAGE_BOUND = 25  # 19 on 2026-11-30: the live part's 15, then the jobs and the gallery's three reads
POLL_BOUND = 20  # 15 on 2026-11-30: session, the experiment, its jobs, one read per figure for all cells


@pytest.fixture
def experiment_id(app: FastAPI, world: World) -> int:
    return seed_experiment(app, world.token, executors=EXECUTORS, seeds=SEEDS)


def test_the_experiment_page_of_a_3_by_3_experiment_sends_a_bounded_number_of_statements(
    client: TestClient, app: FastAPI, experiment_id: int
) -> None:
    with statements(app.state.sessionmaker.kw["bind"]) as sent:
        page = client.get(f"/experiments/{experiment_id}")
    assert page.status_code == 200 and "jagg" in page.text
    assert len(sent) <= PAGE_BOUND, "\n".join(sent)


def test_the_summary_poll_of_a_3_by_3_experiment_sends_a_bounded_number_of_statements(
    client: TestClient, app: FastAPI, experiment_id: int
) -> None:
    with statements(app.state.sessionmaker.kw["bind"]) as sent:
        live = client.get(f"/experiments/{experiment_id}/live")
    assert live.status_code == 200
    assert len(sent) <= POLL_BOUND, "\n".join(sent)
