"""`sfumato export JOB --format diffusers|comfyui|merged` on the live platform: an export job runs on the worker
and its result comes back through the platform's download, unpacked; a format or step the job lacks is one line
on stderr naming it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from client_harness import TinyJobs, cli_env, run_cli
from platform_harness import Platform
from safetensors.torch import load_file

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def env(live_platform: Platform, tmp_path: Path) -> dict[str, str]:
    return cli_env(live_platform, tmp_path)


def failed(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    return result.stderr


def test_a_diffusers_export_is_run_on_the_worker_and_downloaded_unpacked(
    env: dict[str, str], tiny_jobs: TinyJobs, tmp_path: Path
) -> None:
    argv = ["export", str(tiny_jobs.native_id), "--format", "diffusers", "--output", str(tmp_path)]
    result = run_cli(env, *argv, timeout=300)  # an export job: placed, started and run on the worker
    assert result.returncode == 0, result.stderr
    folder = Path(result.stdout.strip().splitlines()[-1])
    assert folder.parent == tmp_path
    weights = load_file(folder / "pytorch_lora_weights.safetensors")
    assert weights and all(key.startswith("transformer.") for key in weights)


def test_a_format_that_is_neither_metrics_nor_a_model_lists_both(env: dict[str, str], tiny_jobs: TinyJobs) -> None:
    stderr = failed(run_cli(env, "export", str(tiny_jobs.native_id), "--format", "onnx"))
    assert "--format must be csv or parquet (metrics) or diffusers, comfyui, merged (a model), not 'onnx'" in stderr


def test_a_step_without_a_checkpoint_is_refused_naming_the_steps_the_job_has(
    env: dict[str, str], tiny_jobs: TinyJobs
) -> None:
    stderr = failed(run_cli(env, "export", str(tiny_jobs.native_id), "--format", "comfyui", "--step", "2"))
    assert "step" in stderr and "no checkpoint at step 2; its steps: 3" in stderr
