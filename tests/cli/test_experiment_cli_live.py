"""`sfumato experiment` end to end on the tiny model: submit a 2-executor x 1-seed matrix with --wait against a
live server, worker and scheduler (real torchrun), then show --json and export the same bytes the API serves."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import httpx
import pytest
from client_harness import TINY_YAML, cli_env, run_cli
from platform_harness import Platform

pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def test_submit_wait_follows_every_cell_then_show_and_export_read_the_servers_answer(
    live_platform: Platform, tmp_path: Path
) -> None:
    spec_file = tmp_path / "tiny.yaml"
    spec_file.write_text(TINY_YAML)
    env = cli_env(live_platform, tmp_path, TINY_STEPS="2")
    submitted = run_cli(
        env, "experiment", "submit", str(spec_file), "--name", "tiny-exp",
        "--axis", "executor.name=native,lean_retain", "--axis", "seed=7", "--wait", "--timeout", "400",
        timeout=460,
    )  # fmt: skip
    stdout = ok(submitted)
    progress = submitted.stderr
    assert "tiny-exp): 2 cells, fair timing" in progress
    assert "executor.name=native, seed=7: job " in progress and " succeeded  step 2/2" in progress
    assert "executor.name=lean_retain, seed=7: job " in progress
    assert "lean_retain: " in stdout
    assert "native's samples/s (1 seed: no interval; no verdict: 1 paired seed, a verdict needs 3)" in stdout
    assert "warning: 1 seed: no verdict will be given on the executors; a verdict needs 3 seeds" in progress
    experiment_id = int(progress.split("experiment ", 1)[1].split(" ", 1)[0])

    shown = json.loads(ok(run_cli(env, "experiment", "show", str(experiment_id), "--json")))
    assert shown["state"] == "succeeded" and [c["status"] for c in shown["cells"]] == ["succeeded"] * 2
    assert all(row["samples_per_s"] for row in shown["summary"]["jobs"])
    assert set(shown["summary"]["host_loads"]) == {str(cell["job_id"]) for cell in shown["cells"]}

    headers = {"Authorization": f"Bearer {live_platform.token}"}
    for fmt, name in (("md", "report.zip"), ("html", "report.html")):
        path = tmp_path / name
        ok(run_cli(env, "experiment", "export", str(experiment_id), "--format", fmt, "-o", str(path)))
        served = httpx.get(
            f"{live_platform.url}/api/v1/experiments/{experiment_id}/report", params={"format": fmt}, headers=headers
        )
        assert path.read_bytes() == served.content
    assert "data:image/png;base64," in (tmp_path / "report.html").read_text()
    # Without .zip, the Markdown report is written as a folder: report.md beside the images it links.
    ok(run_cli(env, "experiment", "export", str(experiment_id), "--format", "md", "-o", str(tmp_path / "md")))
    links = re.findall(r"\]\((images/[^)]+)\)", (tmp_path / "md" / "report.md").read_text())
    assert links and all((tmp_path / "md" / link).is_file() for link in links)
