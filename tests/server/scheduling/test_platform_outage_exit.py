"""A trainer that exits because a platform part stayed unreachable (exit code 75, trainer/spec/exit_codes.py) is
a restart of the platform, not the job's failure: retried from its checkpoint while `retry.max_platform_restarts`
allows, then failed naming the reward."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from server.models import Job, JobEvent
from server.services import job_runs
from server.services.placement_pass import NodeTask
from server.services.scheduler import schedule_once
from tests.server.scheduling.test_job_runs import NODE_TOKEN_KEY, scheduled

OUTAGE_LINE = (
    "[rank1]: platform outage: RewardServerUnreachable: reward 'remote' at http://10.0.0.5:8000: no answer for "
    "301 s of outage_window_s=300 (41 tries): cannot reach it (ConnectError: All connection attempts failed)"
)
TORCHRUN_ROOT_CAUSE_OUTAGE = [
    "step 6/12 reward 0.41",
    OUTAGE_LINE,
    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
    "Root Cause (first observed failure):",
    "[0]:",
    "  rank      : 1 (local_rank: 1)",
    "  exitcode  : 75 (pid: 17966)",
    "  error_file: <N/A>",
]
NAMED = (
    "trainer on alpha (node 0) met a platform outage: RewardServerUnreachable: reward 'remote' at "
    "http://10.0.0.5:8000: no answer for 301 s"
)


def run_attempt(factory: sessionmaker[Session], task: NodeTask, tmp_path, tail: list[str]) -> str | None:
    """Start the attempt's node, mark it running, and finish it with torchrun's exit 1 and this log tail."""
    with factory.begin() as session:
        job_runs.start_run(session, task.job_id, task.attempt, 0, "alpha", tmp_path, node_token_key=NODE_TOKEN_KEY)
        job_runs.mark_running(session, task.job_id, task.attempt, 0, "alpha")
    with factory.begin() as session:
        return job_runs.finish_run(session, task.job_id, task.attempt, 0, "alpha", 1, None, tail)


def events(factory: sessionmaker[Session], job_id: int) -> list[str]:
    with factory() as session:
        return list(session.scalars(select(JobEvent.message).where(JobEvent.job_id == job_id).order_by(JobEvent.id)))


def test_a_rank_that_met_a_platform_outage_sends_the_job_back_to_the_queue_naming_the_reward(
    factory, add_host, add_job, tmp_path
):
    task = scheduled(factory, add_host, add_job, max_platform_restarts=3)

    assert run_attempt(factory, task, tmp_path, TORCHRUN_ROOT_CAUSE_OUTAGE) == "queued"
    with factory() as session:
        assert session.get_one(Job, task.job_id).error is None
    assert events(factory, task.job_id)[-1].startswith(NAMED)
    assert events(factory, task.job_id)[-1].endswith("; restarted by the platform (1 of 3 restarts)")


def test_the_retry_resumes_from_the_checkpoint_as_after_a_lost_host(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job, max_attempts=3)
    run_attempt(factory, task, tmp_path, TORCHRUN_ROOT_CAUSE_OUTAGE)

    sent: list[NodeTask] = []
    schedule_once(factory, sent.append, 30.0)
    with factory.begin() as session:
        plan = job_runs.start_run(session, task.job_id, 2, 0, "alpha", tmp_path, node_token_key=NODE_TOKEN_KEY)

    assert [t.attempt for t in sent] == [2]
    assert plan is not None and plan.resume


def test_an_outage_with_no_platform_restart_left_fails_the_job_naming_the_reward(
    factory, add_host, add_job, tmp_path
):
    task = scheduled(factory, add_host, add_job, max_platform_restarts=0)

    assert run_attempt(factory, task, tmp_path, TORCHRUN_ROOT_CAUSE_OUTAGE) == "failed"
    with factory() as session:
        error = session.get_one(Job, task.job_id).error
    assert error.startswith(NAMED) and error.endswith("; no platform restarts left (0 of 0 used)")


def test_a_trainer_run_without_torchrun_that_exits_75_is_an_outage_too(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job, max_attempts=2)
    with factory.begin() as session:
        job_runs.start_run(session, task.job_id, task.attempt, 0, "alpha", tmp_path, node_token_key=NODE_TOKEN_KEY)
        job_runs.mark_running(session, task.job_id, task.attempt, 0, "alpha")
        status = job_runs.finish_run(session, task.job_id, task.attempt, 0, "alpha", 75, None, [OUTAGE_LINE])

    assert status == "queued"


def test_a_reward_that_answers_wrongly_still_fails_the_job_at_once(factory, add_host, add_job, tmp_path):
    task = scheduled(factory, add_host, add_job, max_attempts=3)
    tail = [
        "Traceback (most recent call last):",
        '  File "trainer/rewards/remote.py", line 9, in exchange',
        "trainer.rewards.remote.RemoteRewardError: reward 'remote' at http://10.0.0.5:8000: refused its answer to 16 "
        "images: scores: 15 values for 16 images",
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: ",
        "Root Cause (first observed failure):",
        "  exitcode  : 1 (pid: 12)",
    ]

    assert run_attempt(factory, task, tmp_path, tail) == "failed"
    with factory() as session:
        assert "RemoteRewardError: reward 'remote' at http://10.0.0.5:8000" in session.get_one(Job, task.job_id).error
