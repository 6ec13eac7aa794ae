"""The trainer's argv is a list for torchrun (no shell), and its environment carries the contract."""

from __future__ import annotations

from pathlib import Path

import pytest

from server.services.job_runs import RunPlan
from worker.launch import threads_per_rank, torchrun_argv, trainer_env


def plan(tmp_path: Path, **overrides: object) -> RunPlan:
    fields: dict[str, object] = {
        "job_id": 7,
        "attempt": 1,
        "node_rank": 0,
        "nnodes": 1,
        "device_type": "cpu",
        "device_indices": [0, 1],
        "run_dir": tmp_path / "jobs" / "7",
        "spec_path": tmp_path / "jobs" / "7" / "spec.json",
        "log_path": tmp_path / "jobs" / "7" / "logs" / "attempt-1.node-0.log",
        "token": "sfj_secret",
        "rendezvous_endpoint": None,
        "host_devices": 2,
    }
    fields.update(overrides)
    return RunPlan(**fields)  # type: ignore[arg-type]


def test_single_node_argv_is_a_standalone_torchrun_list_ending_in_the_trainer_command(tmp_path: Path):
    argv = torchrun_argv(plan(tmp_path), python="/venv/bin/python")

    run_dir = tmp_path / "jobs" / "7"
    assert argv == [
        "/venv/bin/python", "-m", "torch.distributed.run",
        "--nnodes", "1", "--nproc-per-node", "2", "--node-rank", "0", "--standalone",
        "-m", "trainer", "run", "--spec", str(run_dir / "spec.json"), "--output-dir", str(run_dir),
    ]  # fmt: skip
    assert all(isinstance(arg, str) for arg in argv)


def test_multi_node_argv_uses_a_static_rendezvous_on_the_first_node_so_ranks_follow_node_ranks(tmp_path: Path):
    argv = torchrun_argv(plan(tmp_path, nnodes=2, node_rank=1, rendezvous_endpoint="10.0.0.5:29507"))

    assert "--standalone" not in argv
    joined = " ".join(argv)
    assert "--nnodes 2" in joined and "--node-rank 1" in joined
    assert "--rdzv-backend static --rdzv-endpoint 10.0.0.5:29507 --rdzv-id sfumato-7-1" in joined


def test_multi_node_without_an_endpoint_is_refused(tmp_path: Path):
    with pytest.raises(ValueError, match="rendezvous"):
        torchrun_argv(plan(tmp_path, nnodes=2))


def test_a_retry_resumes_from_the_checkpoint(tmp_path: Path):
    assert torchrun_argv(plan(tmp_path, attempt=2))[-1] == "--resume"
    assert "--resume" not in torchrun_argv(plan(tmp_path))


def test_argv_survives_shell_metacharacters_in_paths_unchanged(tmp_path: Path):
    odd = tmp_path / "a b; rm -rf $HOME"
    argv = torchrun_argv(plan(tmp_path, run_dir=odd, spec_path=odd / "spec.json"))

    assert argv[argv.index("--output-dir") + 1] == str(odd)


def test_cuda_job_env_names_its_devices_and_carries_the_job_contract(tmp_path: Path):
    env = trainer_env(
        plan(tmp_path, device_type="cuda", device_indices=[2, 5], host_devices=8),
        {"PATH": "/usr/bin", "SFUMATO_DATABASE_URL": "postgresql://secret", "CUDA_VISIBLE_DEVICES": "0"},
        api_url="http://server:8000",
        home=tmp_path / "home",
        cpu_count=32,
    )

    assert env["CUDA_VISIBLE_DEVICES"] == "2,5"
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["SFUMATO_API_URL"] == "http://server:8000"
    assert (env["SFUMATO_JOB_ID"], env["SFUMATO_JOB_ATTEMPT"], env["SFUMATO_JOB_TOKEN"]) == ("7", "1", "sfj_secret")
    assert env["SFUMATO_HOME"] == str((tmp_path / "home").resolve())
    assert env["OMP_NUM_THREADS"] == "4"
    assert env["PATH"] == "/usr/bin"
    assert "SFUMATO_DATABASE_URL" not in env, "the worker's database credentials must not reach the trainer"


def test_cpu_job_env_hides_gpus_and_shares_cores_between_slots(tmp_path: Path):
    env = trainer_env(plan(tmp_path), {}, api_url="http://x", home=tmp_path, cpu_count=16)

    assert env["CUDA_VISIBLE_DEVICES"] == ""
    assert env["OMP_NUM_THREADS"] == "8"


def test_a_node_other_than_the_first_gets_its_node_token_as_its_reward_token_and_no_job_token(tmp_path: Path):
    node_1 = plan(tmp_path, token=None, reward_token="sfn_7_1_1_mac", node_rank=1, nnodes=2)

    env = trainer_env(node_1, {"SFUMATO_JOB_TOKEN": "the worker's own"}, api_url="http://x", home=tmp_path)

    assert env["SFUMATO_REWARD_TOKEN"] == "sfn_7_1_1_mac"
    assert "SFUMATO_JOB_TOKEN" not in env


def test_node_0_gets_its_reward_token_beside_the_job_token_and_never_the_workers_own(tmp_path: Path):
    node_0 = plan(tmp_path, reward_token="sfr_scoring")

    env = trainer_env(node_0, {"SFUMATO_REWARD_TOKEN": "the worker's own"}, api_url="http://x", home=tmp_path)

    assert (env["SFUMATO_JOB_TOKEN"], env["SFUMATO_REWARD_TOKEN"]) == ("sfj_secret", "sfr_scoring")


def test_a_rank_gets_at_least_one_thread():
    assert threads_per_rank(host_devices=8, cpu_count=2) == 1
