"""The supervisor runs a stand-in trainer: logs stream, cancel stops the whole process group."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from platform_harness import still_alive_after
from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Job, LogLine
from server.services import job_runs
from server.services.placement_pass import NodeTask
from server.services.scheduler import schedule_once
from worker.supervisor import Outcome, supervise


@pytest.fixture
def plan(factory: sessionmaker[Session], add_host, add_job, tmp_path: Path) -> job_runs.RunPlan:
    add_host("alpha", devices=1)
    add_job()
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    with factory.begin() as session:
        started = job_runs.start_run(session, sent[0].job_id, 1, 0, "alpha", tmp_path, node_token_key=b"k")
    assert started is not None
    return started


def run(
    factory: sessionmaker[Session],
    plan: job_runs.RunPlan,
    script: str,
    grace: float = 5.0,
    shutdown: threading.Event | None = None,
) -> Outcome:
    return supervise(
        plan,
        [sys.executable, "-c", script],
        {"PATH": os.environ["PATH"]},
        factory.begin,
        host_name="alpha",
        cancel_grace_seconds=grace,
        shutdown=shutdown or threading.Event(),
    )


def request_cancel_when_running(factory: sessionmaker[Session], job_id: int) -> threading.Thread:
    def cancel() -> None:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            with factory.begin() as session:
                job = session.get(Job, job_id)
                if job.status == "running":
                    job.cancel_requested = True
                    return
            time.sleep(0.1)

    thread = threading.Thread(target=cancel)
    thread.start()
    return thread


def test_output_lines_reach_the_database_and_the_log_file_and_the_exit_code_is_kept(factory, plan):
    outcome = run(factory, plan, "import sys\nprint('step 1')\nprint('oops', file=sys.stderr)\nsys.exit(3)")

    assert (outcome.exit_code, outcome.stopped_for) == (3, None)
    assert sorted(outcome.tail) == ["oops", "step 1"]
    with factory() as session:
        rows = {(r.stream, r.text) for r in session.scalars(select(LogLine).where(LogLine.job_id == plan.job_id))}
        assert session.get(Job, plan.job_id).status == "running"
    assert {row for row in rows if row[0] != "worker"} == {("stdout", "step 1"), ("stderr", "oops")}
    text = plan.log_path.read_text()
    assert "[stdout] step 1" in text and "[stderr] oops" in text and "exit code 3" in text


def test_the_command_and_the_exit_code_join_the_job_s_logs_under_stream_worker(factory, plan):
    outcome = run(factory, plan, "import sys\nsys.exit(3)")

    with factory() as session:
        stored = [r.text for r in session.scalars(select(LogLine).where(LogLine.stream == "worker"))]
    assert [text.split()[0] for text in stored] == ["$"]  # stored while the trainer ran
    assert outcome.unsaved_logs == [("worker", "exit code 3")]  # stored with the node's end (tasks.finish)


def exits(pid: int) -> bool:
    """The process is gone, or goes within 10 s (its parent's end reaches it through the process group)."""
    try:
        return still_alive_after([psutil.Process(pid)], timeout=10) == []
    except psutil.NoSuchProcess:
        return True


def test_cancel_terminates_the_trainer_and_its_children(factory, plan, tmp_path: Path):
    child_pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(child_pid_file)!r}, 'w').write(str(child.pid))\n"
        "print('training', flush=True)\n"
        "time.sleep(60)\n"
    )
    canceller = request_cancel_when_running(factory, plan.job_id)

    outcome = run(factory, plan, script)
    canceller.join()

    assert outcome.stopped_for == job_runs.STOP_CANCEL
    assert outcome.exit_code == -signal.SIGTERM  # stopped in its sleep, which would have ended with 0
    assert exits(int(child_pid_file.read_text())), "the trainer's child outlived the cancel"


def test_a_trainer_that_ignores_sigterm_is_killed_after_the_grace_period(factory, plan):
    script = (
        "import signal, time\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('stubborn', flush=True)\n"
        "time.sleep(60)\n"
    )
    canceller = request_cancel_when_running(factory, plan.job_id)

    outcome = run(factory, plan, script, grace=1.0)
    canceller.join()

    assert outcome.exit_code == -signal.SIGKILL  # killed in its sleep, which would have ended with 0
    assert "SIGKILL" in plan.log_path.read_text()


def test_worker_shutdown_stops_the_trainer(factory, plan):
    shutdown = threading.Event()
    shutdown.set()

    outcome = run(factory, plan, "import time\ntime.sleep(60)", shutdown=shutdown)

    assert outcome.stopped_for == job_runs.STOP_SHUTDOWN
    assert outcome.exit_code == -15
