"""An experiment in the page tests' world: created through services.experiments (the API's path), its cells
then finished with metrics and samples shaped like the trainer's, so that the summary has figures."""

from __future__ import annotations

from datetime import timedelta
from functools import cache

from fastapi import FastAPI
from page_fixtures import SPEC_BASE, add_metrics, add_samples

from server.models import Job, utcnow
from server.schemas.experiments import AxisIn, ExperimentCreate
from server.services.auth import authenticate_api_token
from server.services.experiments import create_experiment

EXECUTORS = ["native", "lean_retain"]
SEEDS = [1, 2]
SPEEDS = {"native": 1.0, "lean_retain": 1.5, "jagg": 1.3}  # lean_retain's seeds run 1.5x and 1.6x native's
PROMPTS = ["a red apple", "a blue ocean"]


def seed_experiment(
    app: FastAPI,
    token: str,
    *,
    finished: bool = True,
    name: str = "exec-by-seed",
    executors: list[str] = EXECUTORS,
    seeds: list[int] = SEEDS,
) -> int:
    """An executors x seeds experiment (2 x 2 unless told) of the token's user in team vision; with `finished`,
    every cell has succeeded with 20 steps of metrics and eval samples at steps 0, 5, 10, 15."""
    settings = app.state.settings
    with app.state.sessionmaker() as session:
        caller = authenticate_api_token(session, token)
        body = ExperimentCreate(
            name=name,
            spec={**SPEC_BASE, "name": name},
            axes=[AxisIn(path="executor.name", values=executors), AxisIn(path="seed", values=seeds)],
        )
        detail = create_experiment(session, caller, body, settings, "vision")
        if finished:
            start = utcnow() - timedelta(minutes=20)
            for cell in detail.cells:
                job = session.get(Job, cell.job_id)
                assert job is not None
                faster = 0.1 * (cell.values["seed"] - 1) * (job.executor != "native")
                speed = SPEEDS[cell.values["executor.name"]] + faster
                job.status, job.step, job.total_steps = "succeeded", 20, 20
                job.started_at, job.finished_at = start, start + timedelta(minutes=2 / speed)
                add_metrics(session, job, range(0, 20), speed=speed)
                add_samples(session, job, settings.resolved_artifact_root(), [0, 5, 10, 15], PROMPTS)
            session.commit()
        return detail.id


@cache
def shared_experiment(app: FastAPI, token: str) -> int:
    """One finished experiment per app, seeded on first use: the browser tests share one live platform."""
    return seed_experiment(app, token)
