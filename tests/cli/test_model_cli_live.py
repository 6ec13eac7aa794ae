"""`sfumato model` on the live platform, from the finished tiny native job (its final model at step 3): register
prints the version, `show NAME:1` prints the lineage with the job's own reward figures at that step, `alias`
sets then moves an alias and says from which version to which, `download` writes the version's model (through
Client.download_artifact), and a malformed version or a missing export is refused in one line."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest
from client_harness import TinyJobs, cli_env, run_cli
from platform_harness import Platform

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


@pytest.fixture
def env(live_platform: Platform, tmp_path: Path) -> dict[str, str]:
    return cli_env(live_platform, tmp_path)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stderr}"
    return result.stdout


def row(shown: str, label: str) -> str:
    """The text `show NAME:VERSION` prints beside `label`."""
    [line] = [line for line in shown.splitlines() if line.startswith(label + "  ")]
    return line.removeprefix(label).strip()


def test_register_show_and_alias_a_version_of_the_tiny_job(
    env: dict[str, str], tiny_jobs: TinyJobs, live_platform: Platform
) -> None:
    job = str(tiny_jobs.native_id)
    registered = ok(run_cli(env, "model", "register", job, "--name", "tiny-cli"))
    assert re.match(rf"tiny-cli:1 \(team \S+\) from job {job} at step 3; training ", registered), registered
    ok(run_cli(env, "model", "register", job, "--name", "tiny-cli", "--step", "3"))

    with live_platform.client() as http:
        history = http.get(f"/api/v1/jobs/{job}/metrics/history", params={"key": "reward/mean"}).json()["points"]
        evals = http.get(f"/api/v1/jobs/{job}/samples/eval-rewards").json()
    [training] = [p["value"] for p in history if p["step"] == 3 and p["current"]]
    evaluation = dict(zip(evals["steps"], evals["values"], strict=True))[3]
    shown = ok(run_cli(env, "model", "show", "tiny-cli:1"))
    assert row(shown, "job") == f"#{job} tiny-native"
    assert row(shown, "base model") == "sd3 builtin:tiny"
    assert row(shown, "rewards") == (
        f"training {training:.4g} (reward/mean at step 3); eval {evaluation:.4g} (eval samples at step 3)"
    )
    assert "\nspec\n" in shown and "  name: flow_grpo\n" in shown

    assert ok(run_cli(env, "model", "alias", "tiny-cli", "production", "1")).strip() == (
        "tiny-cli@production: none -> version 1"
    )
    assert ok(run_cli(env, "model", "alias", "tiny-cli", "production", "2")).strip() == (
        "tiny-cli@production: version 1 -> version 2"
    )
    aliased = json.loads(ok(run_cli(env, "model", "show", "tiny-cli@production", "--json")))
    assert (aliased["version"], aliased["aliases"]) == (2, ["production"])
    [listed] = [m for m in json.loads(ok(run_cli(env, "model", "list", "--json"))) if m["name"] == "tiny-cli"]
    assert listed["latest_version"] == 2


def test_download_writes_the_versions_model_and_a_missing_export_is_one_line_naming_format(
    env: dict[str, str], tiny_jobs: TinyJobs, tmp_path: Path
) -> None:
    ok(run_cli(env, "model", "register", str(tiny_jobs.native_id), "--name", "tiny-download"))
    printed = ok(run_cli(env, "model", "download", "tiny-download:1", "--out", str(tmp_path))).strip()
    folder = tmp_path / "model"
    assert printed == f"tiny-download:1: model model of job {tiny_jobs.native_id} at step 3 -> {folder}"
    assert (folder / "adapter_model.safetensors").is_file()
    missing = run_cli(env, "model", "download", "tiny-download:1", "--format", "merged", "--out", str(tmp_path))
    assert (missing.returncode, missing.stdout) == (1, "")
    assert "format: no 'merged' export of this version; its exports: " in missing.stderr, missing.stderr


def test_a_malformed_version_or_an_unknown_model_is_one_line_on_stderr(env: dict[str, str]) -> None:
    malformed = run_cli(env, "model", "show", "tiny-cli:first")
    assert (malformed.returncode, malformed.stdout) == (1, "")
    assert malformed.stderr.strip() == (
        "error: 'tiny-cli:first' names no model version: write NAME, NAME:VERSION (1, 2, ...) or NAME@ALIAS"
    )
    unknown = run_cli(env, "model", "show", "no-such-model:1")
    assert unknown.returncode == 1 and "Traceback" not in unknown.stderr
    assert unknown.stderr.strip().endswith("model 'no-such-model' not found"), unknown.stderr
