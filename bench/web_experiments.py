"""bench/web.py's experiment cases: the summary of a 3 x 3 experiment whose nine cells are 1M-point jobs, and
creating an experiment of 64 cells (POST /api/v1/experiments, each cell validated and queued)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import httpx
from sqlalchemy import text

from server.models import ApiToken, Experiment, User
from server.services.tokens import USER_TOKEN_PREFIX, hash_token, new_token

EXECUTORS = ("native", "lean_retain", "jagg")
SEEDS = (1, 2, 3)
CREATE_CELLS = 64


def experiment_of_big_jobs(app: Any, big_jobs: list[int]) -> int:
    """A 3 x 3 experiment (executor x seed) whose cells are nine 1M-point jobs."""
    assert len(big_jobs) == 9, big_jobs
    with app.state.sessionmaker() as session:
        experiment = Experiment(
            name="bench-3x3",
            team_id=session.scalar(text("SELECT team_id FROM jobs WHERE id = :j"), {"j": big_jobs[0]}),
            base_spec={"name": "bench"},
            axes=[{"path": "executor.name", "values": list(EXECUTORS)}, {"path": "seed", "values": list(SEEDS)}],
            fair_timing=True,
            order_seed=1,
        )
        session.add(experiment)
        session.flush()
        cells = [(e, s) for e in EXECUTORS for s in SEEDS]
        for job_id, (executor, seed) in zip(big_jobs, cells, strict=True):
            session.execute(
                text("UPDATE jobs SET experiment_id = :x, experiment_cell = :cell, executor = :e WHERE id = :j"),
                {
                    "x": experiment.id,
                    "cell": f'{{"executor.name": "{executor}", "seed": {seed}}}',
                    "e": executor,
                    "j": job_id,
                },
            )
        session.commit()
        return experiment.id


def bench_token(app: Any) -> str:
    """An API token of the bench user: creating and cancelling take a token, not the page session."""
    raw = new_token(USER_TOKEN_PREFIX)
    with app.state.sessionmaker() as session:
        user_id = session.query(User.id).filter_by(username="bench").scalar()
        session.add(ApiToken(user_id=user_id, name="bench", token_hash=hash_token(raw), scope="write"))
        session.commit()
    return raw


async def create_ms(app: Any, client: httpx.AsyncClient, runs: int) -> dict[str, Any]:
    """Median milliseconds of creating a 64-cell experiment (cancelled after each run, so the queue stays short)."""
    body = {
        "name": "bench-64",
        "spec": {"name": "bench"},
        "axes": [{"path": "seed", "values": list(range(CREATE_CELLS))}],
    }
    headers = {"Authorization": f"Bearer {bench_token(app)}"}
    samples = []
    for run in range(runs + 1):
        start = time.perf_counter()
        response = await client.post("/api/v1/experiments", json=body, headers=headers)
        elapsed = (time.perf_counter() - start) * 1000
        assert response.status_code == 201, response.text
        await client.post(f"/api/v1/experiments/{response.json()['id']}/cancel", headers=headers)
        if run:  # the first is the warm-up
            samples.append(elapsed)
    median = statistics.median(samples)
    return {
        "what": f"Create an experiment of {CREATE_CELLS} cells (POST)",
        "url": "/api/v1/experiments",
        "median_ms": round(median, 1),
        "target_ms": 1000,
        "ok": median <= 1000,
        "min_ms": round(min(samples), 1),
        "max_ms": round(max(samples), 1),
        "bytes": len(response.content),
    }
