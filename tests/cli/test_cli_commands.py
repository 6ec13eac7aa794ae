"""The `sfumato` entry point keeps the platform's commands beside the client's."""

from __future__ import annotations

from typer.testing import CliRunner

from server.cli import app


def test_one_entry_point_offers_the_platform_and_the_client_commands() -> None:
    result = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    listed = {line.split()[1] for line in result.output.splitlines() if line.startswith("│ ") and len(line.split()) > 2}
    platform = {"up", "server", "worker", "scheduler", "db"}
    client = {"login", "submit", "jobs", "show", "logs", "cancel", "retry", "compare", "export", "token", "hosts"}
    assert platform | client <= listed


def test_export_refuses_an_unknown_format_before_calling_the_server() -> None:
    result = CliRunner().invoke(app, ["--url", "http://127.0.0.1:1", "--token", "x", "export", "1", "--format", "xls"])
    assert result.exit_code == 1
    assert "error: --format must be csv or parquet, not 'xls'" in result.output
