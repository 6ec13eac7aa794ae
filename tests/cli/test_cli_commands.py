"""The `sfumato` entry point keeps the platform's commands beside the client's."""

from __future__ import annotations

import os
import subprocess
import sys

from client_harness import without_server_dependencies
from platform_harness import REPO
from typer.testing import CliRunner

from sfumato.cli import app


def test_one_entry_point_offers_the_platform_and_the_client_commands() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    listed = {line.split()[1] for line in result.output.splitlines() if line.startswith("│ ") and len(line.split()) > 2}
    platform = {"up", "server", "worker", "scheduler", "db", "reward-server"}
    client = {
        "login",
        "submit",
        "jobs",
        "show",
        "logs",
        "cancel",
        "retry",
        "compare",
        "export",
        "advise",
        "token",
        "hosts",
    }
    assert platform | client <= listed


def test_export_refuses_an_unknown_format_before_calling_the_server() -> None:
    result = CliRunner().invoke(app, ["--url", "http://127.0.0.1:1", "--token", "x", "export", "1", "--format", "xls"])
    assert result.exit_code == 1
    expected = "error: --format must be csv or parquet (metrics) or diffusers, comfyui, merged (a model), not 'xls'"
    assert expected in result.output


def test_reward_server_refuses_a_device_it_cannot_use_before_loading_anything() -> None:
    result = CliRunner().invoke(app, ["reward-server", "--reward", "brightness", "--device", "gpu0"])
    assert result.exit_code == 2
    assert "error: --device: 'gpu0'; allowed: cpu, cuda, cuda:<index>" in result.output


def test_reward_server_refuses_an_unknown_reward_naming_it() -> None:
    result = CliRunner().invoke(app, ["reward-server", "--reward", "beauty"])
    assert result.exit_code == 2 and "unknown reward 'beauty'" in result.output


def test_the_command_imports_without_any_server_side_module() -> None:
    """`sfumato --help` with server/, web/, worker/, trainer/ and their dependencies unimportable: the
    platform commands import them only when they run."""
    code = """
import runpy
sys.argv = ['sfumato', '--help']
try:
    runpy.run_module('sfumato.cli', run_name='__main__')
except SystemExit as exit:
    assert exit.code == 0, exit.code
rooms = ("server", "web", "worker", "trainer", "torch", "fastapi", "sqlalchemy", "celery", "uvicorn")
print(sorted(m for m in sys.modules if m.split(".")[0] in rooms))
"""
    argv = [sys.executable, "-c", without_server_dependencies(code)]
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, env={**os.environ, "COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    assert "scheduler" in result.stdout
    assert result.stdout.strip().splitlines()[-1] == "[]"


def test_download_takes_every_kind_of_artifact_a_job_registers() -> None:
    for kind in ("checkpoint", "model", "export", "playground"):
        argv = ["--url", "http://127.0.0.1:1", "--token", "x", "download", "1", "--kind", kind]
        result = CliRunner().invoke(app, argv)
        assert "Invalid value" not in result.output and "cannot reach" in result.output, result.output
