"""Celery tasks: thin, each one calls services and the supervisor."""

from __future__ import annotations

import logging
import os

from server.config import get_settings
from server.services import job_runs
from worker.celery_app import app
from worker.host_agent import SHUTDOWN, host_name
from worker.launch import torchrun_argv, trainer_env
from worker.supervisor import Outcome, supervise
from worker.transactions import writer_session

log = logging.getLogger(__name__)


@app.task(name="worker.run_job")
def run_job(job_id: int, attempt: int, node_rank: int = 0) -> str:
    """Run one node of one job attempt to its end; returns the job's status afterwards."""
    settings = get_settings()
    host = host_name(settings)
    with writer_session() as session:
        plan = job_runs.start_run(session, job_id, attempt, node_rank, host, settings.resolved_artifact_root())
    if plan is None:
        log.info("job %s attempt %s node %s is not current on %s; nothing to run", job_id, attempt, node_rank, host)
        return "skipped"

    argv = torchrun_argv(plan)
    env = trainer_env(plan, os.environ, api_url=settings.public_url, home=settings.home)
    try:
        outcome = supervise(
            plan,
            argv,
            env,
            writer_session,
            host_name=host,
            cancel_grace_seconds=settings.cancel_grace_seconds,
            shutdown=SHUTDOWN,
        )
    except OSError as exc:  # the trainer could not even start
        outcome = Outcome(exit_code=127, stopped_for=None, tail=[f"could not start {argv[0]}: {exc}"])
    with writer_session() as session:
        status = job_runs.finish_run(
            session, job_id, attempt, node_rank, host, outcome.exit_code, outcome.stopped_for, outcome.tail
        )
    return status or "unchanged"
