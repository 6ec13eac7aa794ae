"""A reporter still running for an attempt that is over is told so once and stops, instead of filling the job's
log with refusals; the attempt that goes on ships what the old one spooled without a refusal. Real reporters
against a real `sfumato server` process, on a database the test places and restarts the job in."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from platform_harness import Platform, answers, prepare
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.db import make_engine
from server.models import Host
from server.services import job_runs
from server.services.placement_pass import NodeTask
from server.services.retry_policy import requeue_interrupted_jobs
from server.services.scheduler import schedule_once
from trainer.reporting.reporter import SPOOL_NAME, Reporter


@pytest.fixture
def factory(migrated_sqlite_url: str) -> Iterator[sessionmaker[Session]]:
    """The database the server process uses too (the shared fixtures' add_host and add_job write to it)."""
    engine = make_engine(migrated_sqlite_url)
    yield sessionmaker(bind=engine, expire_on_commit=False)
    engine.dispose()


@pytest.fixture
def server(tmp_path: Path, migrated_sqlite_url: str) -> Iterator[Platform]:
    platform = prepare(tmp_path / "platform", migrated_sqlite_url, "", None)
    argv = [sys.executable, "-m", "sfumato.cli", "server", "--port", str(platform.port), "--workers", "1"]
    platform.start("server", argv)
    try:
        platform.wait_for("the server to answer", lambda: answers(f"{platform.url}/api/v1/health"), timeout=90)
        yield platform
    finally:
        platform.stop()


@dataclass
class Attempt:
    job_id: int
    number: int
    token: str


def start_attempt(factory: sessionmaker[Session], run_dir: Path) -> Attempt:
    """What the scheduler and the worker do: place the job, claim node 0 (its job token), mark it running."""
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    [task] = sent
    with factory.begin() as session:
        plan = job_runs.start_run(session, task.job_id, task.attempt, 0, "alpha", run_dir, node_token_key=b"k")
        assert plan is not None and plan.token is not None
        job_runs.mark_running(session, task.job_id, task.attempt, 0, "alpha")
    return Attempt(task.job_id, task.attempt, plan.token)


def restart_worker(factory: sessionmaker[Session]) -> None:
    with factory.begin() as session:
        requeue_interrupted_jobs(session, session.scalars(select(Host).where(Host.name == "alpha")).one())


def report_steps(reporter: Reporter, steps: range) -> None:
    for step in steps:
        reporter.metrics(step, {"loss": float(step)})
        reporter.progress(step, 20, 0.5, 4.0)


def reporter_lines(out: str) -> list[str]:
    return [line for line in out.splitlines() if line.startswith("reporter:")]


@pytest.fixture
def stale(server: Platform, factory, add_host, add_job, tmp_path: Path) -> tuple[Attempt, Reporter]:
    """Attempt 1 and its reporter, spooling in `tmp_path`, after the platform restarted the job as attempt 2."""
    add_host("alpha", devices=1)
    add_job()
    first = start_attempt(factory, tmp_path)
    reporter = Reporter(tmp_path, server.url, str(first.job_id), first.number, first.token, batch_interval_s=0.05)
    restart_worker(factory)
    start_attempt(factory, tmp_path)
    return first, reporter


def test_a_reporter_of_an_attempt_that_is_over_is_told_once_and_stops(
    server: Platform, stale: tuple[Attempt, Reporter], capsys: pytest.CaptureFixture[str]
) -> None:
    first, reporter = stale

    report_steps(reporter, range(1, 11))
    server.wait_for("the stale reporter to stop", lambda: reporter.superseded, timeout=30)
    report_steps(reporter, range(11, 21))
    reporter.close(timeout_s=10)

    assert reporter_lines(capsys.readouterr().out) == [
        f"reporter: stopped reporting: attempt 1 of job {first.job_id} is over: the job is at attempt 2"
    ]


def test_a_stopped_reporter_spools_nothing_more_and_leaves_the_spool_to_the_attempt_that_goes_on(
    server: Platform, stale: tuple[Attempt, Reporter], tmp_path: Path
) -> None:
    _, reporter = stale
    report_steps(reporter, range(1, 3))
    server.wait_for("the stale reporter to stop", lambda: reporter.superseded, timeout=30)
    spooled = (tmp_path / SPOOL_NAME).stat().st_size

    report_steps(reporter, range(3, 6))
    reporter.close(timeout_s=10)

    assert (tmp_path / SPOOL_NAME).stat().st_size == spooled


def test_the_attempt_that_goes_on_ships_the_old_attempt_s_spool_without_a_refusal(
    server: Platform, factory, add_host, add_job, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    add_host("alpha", devices=1)
    add_job()
    first = start_attempt(factory, tmp_path)
    # Attempt 1 spooled while the server was away (no URL: nothing sent), then the platform restarted the job.
    offline = Reporter(tmp_path, "http://127.0.0.1:9", str(first.job_id), first.number, first.token, retries=0)
    report_steps(offline, range(1, 6))
    offline.close(timeout_s=0)
    restart_worker(factory)
    second = start_attempt(factory, tmp_path)

    resumed = Reporter(tmp_path, server.url, str(second.job_id), second.number, second.token, batch_interval_s=0.05)
    report_steps(resumed, range(5, 8))
    resumed.close(timeout_s=30)

    assert reporter_lines(capsys.readouterr().out) == []
    assert not (tmp_path / SPOOL_NAME).exists()  # everything shipped
