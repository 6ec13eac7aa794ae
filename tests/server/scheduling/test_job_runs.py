"""Claiming and finishing a job attempt on a worker, on SQLite and PostgreSQL."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Allocation, Host, Job, JobEvent, JobStatus, LogLine
from server.services import job_runs
from server.services.job_status import set_status
from server.services.node_tokens import NodeClaim, node_token_key, verified_claim
from server.services.placement_pass import NodeTask
from server.services.scheduler import schedule_once
from server.services.tokens import hash_token

AddHost = Callable[..., Host]
AddJob = Callable[..., Job]
NODE_TOKEN_KEY = node_token_key("the worker's SFUMATO_SECRET_KEY")


def scheduled(factory: sessionmaker[Session], add_host: AddHost, add_job: AddJob, **job_fields: object) -> NodeTask:
    add_host("alpha", devices=2)
    add_job(**job_fields)
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    return sent[0]


def start(factory: sessionmaker[Session], task: NodeTask, root: Path, host: str = "alpha") -> job_runs.RunPlan | None:
    with factory.begin() as session:
        return job_runs.start_run(
            session, task.job_id, task.attempt, task.node_rank, host, root, node_token_key=NODE_TOKEN_KEY
        )


def finish(factory: sessionmaker[Session], task: NodeTask, code: int, stopped_for: str | None = None) -> str | None:
    with factory.begin() as session:
        return job_runs.finish_run(
            session, task.job_id, task.attempt, task.node_rank, "alpha", code, stopped_for, ["line 1", "Boom"]
        )


def job(factory: sessionmaker[Session], job_id: int) -> Job:
    with factory() as session:
        return session.get(Job, job_id)


def live(factory: sessionmaker[Session], job_id: int) -> int:
    with factory() as session:
        return len(
            session.scalars(
                select(Allocation).where(Allocation.job_id == job_id, Allocation.released_at.is_(None))
            ).all()
        )


def test_start_writes_the_spec_and_mints_a_token_stored_only_as_its_hash(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job, devices=2)

    plan = start(factory, task, tmp_path)

    assert plan is not None
    assert plan.run_dir == tmp_path / "jobs" / str(task.job_id)
    assert json.loads(plan.spec_path.read_text())["resources"]["devices"] == 2
    assert plan.device_indices == [0, 1] and plan.host_devices == 2
    assert plan.token is not None and plan.token.startswith("sfj_")
    assert job(factory, task.job_id).token_hash == hash_token(plan.token)


def test_only_node_0_gets_the_job_token_and_each_other_node_a_node_token_of_its_attempt(
    factory, add_host, add_job, tmp_path
):
    add_host("alpha", devices=1)
    add_host("beta", devices=1)
    add_job(nodes=2)
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)

    first, second = (start(factory, t, tmp_path, host=t.host) for t in sorted(sent, key=lambda t: t.node_rank))

    assert first is not None and second is not None
    assert first.token is not None and first.reward_token is not None and first.reward_token.startswith("sfr_")
    stored = job(factory, first.job_id)
    assert (stored.token_hash, stored.reward_token_hash) == (hash_token(first.token), hash_token(first.reward_token))
    assert second.token is None and second.reward_token is not None
    assert verified_claim(NODE_TOKEN_KEY, second.reward_token) == NodeClaim(second.job_id, second.attempt, 1)


def test_a_job_that_leaves_its_placed_states_holds_no_job_or_reward_token(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)

    with factory.begin() as session:
        set_status(session, session.get_one(Job, task.job_id), JobStatus.QUEUED, "its reward service went away")

    stored = job(factory, task.job_id)
    assert (stored.token_hash, stored.reward_token_hash) == (None, None)


def test_a_stale_attempt_or_another_host_starts_nothing(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)

    assert start(factory, task, tmp_path, host="beta") is None
    stale = NodeTask(task.job_id, task.attempt + 1, 0, "alpha", "host.alpha")
    assert start(factory, stale, tmp_path) is None
    assert job(factory, task.job_id).status == "scheduled"


def test_a_job_cancelled_before_it_starts_is_cancelled_and_frees_its_devices(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    with factory.begin() as session:
        session.get(Job, task.job_id).cancel_requested = True

    assert start(factory, task, tmp_path) is None
    assert job(factory, task.job_id).status == "cancelled"
    assert live(factory, task.job_id) == 0


def test_exit_zero_succeeds_releases_devices_and_clears_the_token(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)
    with factory.begin() as session:
        assert job_runs.mark_running(session, task.job_id, task.attempt, task.node_rank, "alpha")

    assert finish(factory, task, 0) == "succeeded"
    done = job(factory, task.job_id)
    assert done.token_hash is None and done.started_at is not None and done.finished_at is not None
    assert live(factory, task.job_id) == 0


def test_nonzero_exit_fails_with_the_log_tail_as_error(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)

    assert finish(factory, task, 3) == "failed"
    assert job(factory, task.job_id).error.endswith("line 1\nBoom")
    assert "exited with code 3" in job(factory, task.job_id).error


def test_a_cancelled_run_ends_cancelled_whatever_its_exit_code(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)

    assert finish(factory, task, -15, job_runs.STOP_CANCEL) == "cancelled"


def test_a_worker_shutdown_sends_the_job_back_to_the_queue(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)

    assert finish(factory, task, -15, job_runs.STOP_SHUTDOWN) == "queued"
    assert job(factory, task.job_id).token_hash is None
    assert live(factory, task.job_id) == 0


def test_the_last_node_of_a_multi_node_job_decides_success(factory, add_host, add_job, tmp_path):
    add_host("alpha", devices=1)
    add_host("beta", devices=1)
    add_job(nodes=2)
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    first, second = sorted(sent, key=lambda t: t.node_rank)
    plans = [start(factory, t, tmp_path, host=t.host) for t in sent]
    by_rank = {p.node_rank: p for p in plans if p}
    assert by_rank[1].rendezvous_endpoint == f"127.0.0.1:{job_runs.rendezvous_port(first.job_id, first.attempt)}"

    with factory.begin() as session:
        assert job_runs.finish_run(session, first.job_id, first.attempt, 0, first.host, 0, None, []) is None
    with factory.begin() as session:
        assert job_runs.finish_run(session, second.job_id, second.attempt, 1, second.host, 0, None, []) == "succeeded"


def test_finishing_a_superseded_attempt_changes_nothing(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)
    with factory.begin() as session:
        set_status(session, session.get(Job, task.job_id), "cancelled")
        assert job_runs.stop_reason(session, task.job_id, task.attempt) == job_runs.STOP_SUPERSEDED

    assert finish(factory, task, 1) is None
    assert job(factory, task.job_id).status == "cancelled"


def test_logs_are_stored_with_stream_and_node(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    with factory.begin() as session:
        job_runs.append_logs(session, task.job_id, 1, 0, [("stdout", "hello"), ("stderr", "warn")])
    with factory() as session:
        rows = session.execute(select(LogLine.stream, LogLine.text).order_by(LogLine.id)).all()
    assert [tuple(r) for r in rows] == [("stdout", "hello"), ("stderr", "warn")]


TORCHRUN_ROOT_CAUSE_SIGKILL = [
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "Root Cause (first observed failure):",
    "[0]:",
    "  rank      : 0 (local_rank: 0)",
    "  exitcode  : -9 (pid: 17966)  (SIGKILL)",
    "  traceback : Signal 9 (SIGKILL) received by PID 17966",
]


def test_an_oom_killed_trainer_is_an_infrastructure_failure_and_is_retried(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)
    with factory.begin() as session:
        job_runs.mark_running(session, task.job_id, task.attempt, task.node_rank, "alpha")
        status = job_runs.finish_run(
            session, task.job_id, task.attempt, 0, "alpha", 1, None, TORCHRUN_ROOT_CAUSE_SIGKILL
        )

    assert status == "queued"
    assert job(factory, task.job_id).error is None
    assert live(factory, task.job_id) == 0


def test_a_sigkilled_torchrun_is_retried_too(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job)
    start(factory, task, tmp_path)

    assert finish(factory, task, -9) == "queued"


def test_a_trainer_exception_fails_the_job_with_the_rank_traceback_not_torchrun_s(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job, max_attempts=3)
    start(factory, task, tmp_path)
    tail = [
        "step 1/4 reward 0.1",
        "Traceback (most recent call last):",
        '  File "trainer/run.py", line 9, in run',
        "    raise ValueError('bad reward')",
        "ValueError: bad reward",
        "Traceback (most recent call last):",
        '  File "torch/distributed/run.py", line 1, in main',
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "  exitcode  : 1 (pid: 12)",
    ]
    with factory.begin() as session:
        status = job_runs.finish_run(session, task.job_id, task.attempt, 0, "alpha", 1, None, tail)

    assert status == "failed"
    error = job(factory, task.job_id).error
    assert error.startswith("trainer exited with code 1 on alpha (node 0)\nTraceback (most recent call last):")
    assert error.endswith("ValueError: bad reward")


def two_node_attempt(factory, add_host, add_job, tmp_path) -> list[NodeTask]:
    add_host("alpha", devices=1)
    add_host("beta", devices=1)
    add_job(nodes=2)
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    with factory.begin() as session:
        for t in sent:
            job_runs.start_run(
                session, t.job_id, t.attempt, t.node_rank, t.host, tmp_path, node_token_key=NODE_TOKEN_KEY
            )
            job_runs.mark_running(session, t.job_id, t.attempt, t.node_rank, t.host)
    return sorted(sent, key=lambda t: t.node_rank)


def finish_node(factory, task: NodeTask, code: int, stopped_for: str | None = None, tail=("Boom",)) -> str | None:
    with factory.begin() as session:
        return job_runs.finish_run(
            session, task.job_id, task.attempt, task.node_rank, task.host, code, stopped_for, list(tail)
        )


def stop_reason(factory, task: NodeTask) -> str | None:
    with factory() as session:
        return job_runs.stop_reason(session, task.job_id, task.attempt)


def test_one_node_failing_stops_the_other_node_and_the_job_fails_when_both_have_ended(
    factory, add_host, add_job, tmp_path
):
    first, second = two_node_attempt(factory, add_host, add_job, tmp_path)

    assert finish_node(factory, second, 1) is None  # the verdict waits for node 0
    assert stop_reason(factory, first) == job_runs.STOP_PEER_FAILED
    assert finish_node(factory, first, -15, job_runs.STOP_PEER_FAILED) == "failed"

    assert job(factory, first.job_id).error == "trainer exited with code 1 on beta (node 1)\nBoom"
    assert live(factory, first.job_id) == 0


def test_a_node_failing_because_its_peer_vanished_is_retried_once_the_peer_host_is_lost(
    factory, add_host, add_job, tmp_path
):
    first, _ = two_node_attempt(factory, add_host, add_job, tmp_path)
    # beta's worker died: its ranks vanished, so alpha's ranks failed in a collective.
    assert finish_node(factory, first, 1, tail=("RuntimeError: Connection closed by peer",)) is None

    with factory.begin() as session:
        host = session.scalar(select(Host).where(Host.name == "beta"))
        host.last_heartbeat_at = host.last_heartbeat_at.replace(year=2000)
    schedule_once(factory, [].append, 30.0)

    requeued = job(factory, first.job_id)
    assert (requeued.status, requeued.error) == ("queued", None)
    assert _last_event(factory, first.job_id).startswith("host beta lost; restarted by the platform")


def _last_event(factory, job_id: int) -> str:
    with factory() as session:
        return session.scalars(select(JobEvent.message).where(JobEvent.job_id == job_id).order_by(JobEvent.id)).all()[
            -1
        ]


def test_one_node_oom_killed_retries_the_whole_job_once_the_other_node_has_stopped(
    factory, add_host, add_job, tmp_path
):
    first, second = two_node_attempt(factory, add_host, add_job, tmp_path)

    assert finish_node(factory, second, -9, tail=()) == "queued"
    assert stop_reason(factory, first) == job_runs.STOP_SUPERSEDED
    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    assert sent == []  # node 0's trainer still holds its device while it stops

    assert finish_node(factory, first, -15, job_runs.STOP_SUPERSEDED) is None
    schedule_once(factory, sent.append, 30.0)
    assert sorted((t.node_rank, t.attempt) for t in sent) == [(0, 2), (1, 2)]


def test_each_attempt_of_a_job_rendezvouses_on_a_port_of_its_own():
    ports = [job_runs.rendezvous_port(7, attempt) for attempt in range(1, 21)]

    assert len(set(ports)) == len(ports)
    assert all(job_runs.RENDEZVOUS_PORT_BASE <= port < job_runs.RENDEZVOUS_PORT_BASE + 500 for port in ports)
