"""The advisor end to end on real processes (PostgreSQL, Redis, a worker, torchrun): `sfumato advise` queues a
probe job, the worker runs `python -m trainer probe` on the CPU host, the report comes back through the ingest
door, and `--submit` queues the spec with the recommended executor, linked to the advice."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from client_harness import cli_env, run_cli
from platform_harness import TINY_SPEC, Platform

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def test_advise_probes_on_the_worker_and_submits_the_recommended_executor(
    start_platform: Callable[[str, str], Platform], postgres_url: str, redis_url: str, tmp_path: Path
) -> None:
    platform = start_platform(postgres_url, redis_url)
    spec = json.loads(TINY_SPEC.read_text())
    spec["algorithm"].update(sampling_steps=4, train_timesteps=2, prompts_per_step=1, group_size=2, total_steps=1)
    spec |= {"samples": {"count": 0}, "checkpoint": {"every": 0}}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))

    result = run_cli(cli_env(platform, tmp_path), "advise", str(path), "--submit", "--json", timeout=400)

    assert result.returncode == 0, f"stdout: {result.stdout}\nstderr: {result.stderr}\n{platform.output()[-3000:]}"
    advice = json.loads(result.stdout)
    rows = {row["executor"]: row for row in advice["answer"]["executors"]}
    assert advice["state"] == "answered" and rows["native"]["samples_per_s"] > 0
    assert rows["jagg"]["error"].startswith("cannot run this spec")  # K = 2 holds no group of 4
    job = advice["submitted_job"]
    assert job["executor"] == advice["answer"]["recommended"]
    probe = platform.wait_status(advice["probe_job_id"], ("succeeded", "failed", "cancelled"), timeout=60)
    assert probe["status"] == "succeeded"  # the report is sent before the trainer exits
