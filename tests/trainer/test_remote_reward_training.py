"""Jobs scored by a reward server: the local run's rewards, an outage inside the outage window costs no step,
a server gone for good ends the run as a platform outage naming the reward (real torchrun, two gloo ranks, the
tiny model)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from sfumato.cli.reward_server_process import RewardServer, reward_server, start_reward_server
from tests.trainer.conftest import REPO, read_metrics, tiny_spec, torchrun, write_spec

EIGHT_BIT_ROUNDING = 1 / 510  # brightness of an image rounded to 8 bits moves by at most half a level
STEPS = 8  # enough that the server is killed (after step 1 is logged) before the job's last step is scored


def remote_spec(reward: dict[str, Any], steps: int = 2) -> dict[str, Any]:
    return tiny_spec(
        algorithm={"total_steps": steps, "sampling_steps": 4},
        resources={"devices": 2},
        reward=[reward],
        samples={"count": 0},
        checkpoint={"every": 0},
    )


def start_torchrun(tmp_path: Path, home: Path, spec: dict[str, Any]) -> subprocess.Popen[str]:
    """``torchrun --nproc-per-node 2 -m trainer run`` in the background, output in tmp_path/job.log."""
    env = {**os.environ, "SFUMATO_HOME": str(home)}
    env.pop("SFUMATO_API_URL", None)
    spec_path = write_spec(tmp_path / "spec.json", spec)
    argv = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2", "-m", "trainer",
            "run", "--spec", str(spec_path), "--output-dir", str(tmp_path / "out")]  # fmt: skip
    with open(tmp_path / "job.log", "w") as log:
        return subprocess.Popen(argv, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)


def wait_for_step(out: Path, step: int, job: subprocess.Popen[str], timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and job.poll() is None:
        if (out / "metrics.jsonl").exists() and len(read_metrics(out)) >= step:
            return
        time.sleep(0.05)
    raise AssertionError(f"step {step} was not logged")


def wait_for_log(log: Path, text: str, job: subprocess.Popen[str], timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and job.poll() is None:
        if text in log.read_text():
            return
        time.sleep(0.05)
    raise AssertionError(f"{text!r} was not logged:\n{log.read_text()[-3000:]}")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.slow
def test_a_job_scored_by_a_reward_server_has_the_rewards_of_the_local_run(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    (tmp_path / "local").mkdir()
    (tmp_path / "remote").mkdir()
    local = torchrun(tmp_path / "local", sfumato_home, remote_spec({"name": "brightness"}), "run", "--output-dir",
                     str(tmp_path / "local" / "out"))  # fmt: skip
    assert local.returncode == 0, local.stderr[-3000:]
    with reward_server("--reward", "brightness") as server:
        remote = torchrun(tmp_path / "remote", sfumato_home, remote_spec({"name": "remote", "url": server.url}), "run",
                          "--output-dir", str(tmp_path / "remote" / "out"))  # fmt: skip
        scored = server.metrics()["sfumato_reward_images_total"]
    assert remote.returncode == 0, remote.stderr[-3000:]
    expected, got = read_metrics(tmp_path / "local" / "out"), read_metrics(tmp_path / "remote" / "out")
    assert [m["step"] for m in got] == [1, 2] and scored == 2 * 8  # two steps of 2 prompts x 4, all on the server
    for local_step, remote_step in zip(expected, got, strict=True):
        assert remote_step["reward/mean"] == pytest.approx(local_step["reward/mean"], abs=EIGHT_BIT_ROUNDING)
        assert remote_step["reward/brightness"] == remote_step["reward/mean"]  # the name the server serves
        assert "reward/remote" not in remote_step


@pytest.mark.slow
def test_a_reward_server_restarted_within_the_outage_window_costs_no_step(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    port = str(free_port())
    server: RewardServer = start_reward_server("--reward", "brightness", "--port", port)
    spec = remote_spec({"name": "remote", "url": server.url, "retries": 0, "timeout_s": 5, "outage_window_s": 120},
                       steps=STEPS)  # fmt: skip
    job = start_torchrun(tmp_path, sfumato_home, spec)
    try:
        wait_for_step(tmp_path / "out", 1, job)
        server.kill()
        wait_for_log(tmp_path / "job.log", f"reward 'remote' at {server.url}: try 2 failed", job)  # the outage met
        server = start_reward_server("--reward", "brightness", "--port", port)
        assert job.wait(timeout=240) == 0, (tmp_path / "job.log").read_text()[-3000:]
    finally:
        job.kill()
        server.kill()
    assert [m["step"] for m in read_metrics(tmp_path / "out")] == list(range(1, STEPS + 1))


@pytest.mark.slow
def test_a_reward_server_gone_for_good_ends_the_run_as_a_platform_outage_naming_the_reward(
    tmp_path: Path, sfumato_home: Path, tiny_model_dir: Path
) -> None:
    server = start_reward_server("--reward", "brightness")
    spec = remote_spec({"name": "remote", "url": server.url, "timeout_s": 2, "outage_window_s": 2}, steps=STEPS)
    job = start_torchrun(tmp_path, sfumato_home, spec)
    try:
        wait_for_step(tmp_path / "out", 1, job)
        server.kill()
        code = job.wait(timeout=240)
    finally:
        job.kill()
    log = (tmp_path / "job.log").read_text()
    assert code != 0
    assert f"platform outage: RewardServerUnreachable: reward 'remote' at {server.url}: no answer for" in log
    assert re.search(r"exitcode\s*: 75 ", log), log[-3000:]  # torchrun's root cause: the outage's exit code
    logged = [m["step"] for m in read_metrics(tmp_path / "out")]
    assert logged == list(range(1, len(logged) + 1)) and len(logged) < STEPS  # the failed step is not logged
    assert json.loads((tmp_path / "spec.json").read_text())["reward"][0]["outage_window_s"] == 2
