"""Celery tasks: thin, each one calls services and the supervisor."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.orm import Session

from server.config import get_settings
from server.db import session_scope
from server.secret_key import session_secret_key
from server.services import job_runs, service_runs
from server.services.node_tokens import node_token_key
from server.services.tokens import new_token
from worker.celery_app import app
from worker.host_agent import SHUTDOWN, host_address, host_name
from worker.launch import torchrun_argv, trainer_env
from worker.service_supervisor import ServiceLaunch, ServiceSupervisor
from worker.supervisor import Outcome, supervise
from worker.transactions import write_when_database_answers

log = logging.getLogger(__name__)
T = TypeVar("T")

# A task whose start cannot reach the database for this long gives up; the scheduler requeues the job.
START_GIVE_UP_SECONDS = 60.0


def _start(start: Callable[[Session], T | None], what: str, host: str) -> T | None:
    """A run's plan, written once the database answers (giving up after START_GIVE_UP_SECONDS); None, logged,
    when the run is no longer this host's to start."""
    plan = write_when_database_answers(
        start, f"starting {what}", give_up_after_seconds=START_GIVE_UP_SECONDS, stop=SHUTDOWN
    )
    if plan is None:
        log.info("%s is not current on %s; nothing to run", what, host)
    return plan


def _until_written(write: Callable[[Session], T], what: str) -> T:
    """An end must reach the database: retried until it does or the worker shuts down."""
    return write_when_database_answers(write, what, give_up_after_seconds=None, stop=SHUTDOWN)


@app.task(name="worker.run_job")
def run_job(job_id: int, attempt: int, node_rank: int = 0) -> str:
    """Run one node of one job attempt to its end; returns the job's status afterwards."""
    settings = get_settings()
    host = host_name(settings)
    what = f"job {job_id} attempt {attempt} node {node_rank}"
    root = settings.resolved_artifact_root()
    key = node_token_key(session_secret_key(settings)) if node_rank > 0 else None  # node 0 has the job token

    def start(session: Session) -> job_runs.RunPlan | None:
        return job_runs.start_run(session, job_id, attempt, node_rank, host, root, node_token_key=key)

    plan = _start(start, what, host)
    if plan is None:
        return "skipped"

    argv = torchrun_argv(plan, python=settings.trainer_python or sys.executable)
    env = trainer_env(plan, os.environ, api_url=settings.public_url, home=settings.home)
    try:
        outcome = supervise(
            plan,
            argv,
            env,
            session_scope,
            host_name=host,
            cancel_grace_seconds=settings.cancel_grace_seconds,
            shutdown=SHUTDOWN,
        )
    except OSError as exc:  # the trainer could not even start
        outcome = Outcome(exit_code=127, stopped_for=None, tail=[f"could not start {argv[0]}: {exc}"])

    def finish(session: Session) -> str | None:
        if outcome.unsaved_logs:
            job_runs.append_logs(session, job_id, attempt, node_rank, outcome.unsaved_logs)
        return job_runs.finish_run(
            session, job_id, attempt, node_rank, host, outcome.exit_code, outcome.stopped_for, outcome.tail
        )

    status = _until_written(finish, f"finishing {what}")
    return status or "unchanged"


SERVICE_TOKEN_PREFIX = "sfs_"


@app.task(name="worker.run_service")
def run_service(service_id: int, generation: int) -> str:
    """Run one generation of a reward service until it is stopped, fails, or the worker shuts down; returns the
    service's state afterwards."""
    settings = get_settings()
    host = host_name(settings)
    what = f"service {service_id} generation {generation}"
    root = settings.resolved_artifact_root()
    plan = _start(lambda session: service_runs.start_service(session, service_id, generation, host, root), what, host)
    if plan is None:
        return "skipped"
    launch = ServiceLaunch(
        python=settings.trainer_python or sys.executable,
        auth_url=f"{settings.public_url.rstrip('/')}/api/v1/services/{service_id}/caller",
        bind_host=host_address(),
        token=new_token(SERVICE_TOKEN_PREFIX),
        grace_seconds=settings.cancel_grace_seconds,
    )
    try:
        stopped_for = ServiceSupervisor(plan, launch, os.environ, session_scope, SHUTDOWN).run()
    except OSError as exc:  # the server could not even start
        log.error("%s could not start: %s", what, exc)
        stopped_for, why = None, f"could not start: {exc}"
        _until_written(
            lambda session: service_runs.mark_died(session, service_id, generation, why, [], was_healthy=False),
            f"recording {what}",
        )
    status = _until_written(
        lambda session: service_runs.finish_service(session, service_id, generation, stopped_for), f"finishing {what}"
    )
    return status or "unchanged"
