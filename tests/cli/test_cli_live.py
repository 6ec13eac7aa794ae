"""The `sfumato` command against a live server on PostgreSQL with a real worker and scheduler, run as a user
runs it (a subprocess): submit --wait, the read commands and their --json, compare, export, login, tokens,
and every bad input → one line on stderr and a non-zero exit, never a traceback."""

from __future__ import annotations

import csv
import io
import json
import re
import stat
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from client_harness import TINY_STEPS, TinyJobs, cli_env, run_cli, without_server_dependencies
from platform_harness import REPO, Platform, free_port

from sfumato import Client

pytestmark = [pytest.mark.postgres, pytest.mark.slow]
STEPS = int(TINY_STEPS)


@pytest.fixture
def env(live_platform: Platform, tmp_path: Path) -> dict[str, str]:
    return cli_env(live_platform, tmp_path)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    return result.stdout


def test_submit_wait_shows_progress_and_ends_with_the_final_reward(
    tiny_jobs: TinyJobs, live_platform: Platform
) -> None:
    """`sfumato submit tiny.yaml --set executor.name=lean_retain --wait`, with total_steps from ${TINY_STEPS}."""
    stdout = ok(tiny_jobs.cli_submit)
    job = Client(live_platform.url, live_platform.token).job(tiny_jobs.lean_id)
    progress = tiny_jobs.cli_submit.stderr
    assert f"job {job.id} (tiny-lean_retain) submitted: lean_retain executor" in progress
    # Without a terminal, a line per change: the queue, then steps with their reward and throughput.
    waiting = rf"job {job.id} (queued|scheduled|running)  step 0/{STEPS}  reward -  - samples/s"
    assert re.search(waiting, progress), progress
    assert re.search(rf"job {job.id} running  step [1-{STEPS}]/{STEPS}  reward \S+  \S+ samples/s", progress), progress
    assert re.search(rf"job {job.id} succeeded  step {STEPS}/{STEPS}", progress), progress
    assert stdout.strip().splitlines()[-1] == (
        f"job {job.id} succeeded: final reward {job.last_reward:.4g} after {STEPS} steps "
        f"({job.samples_per_s:.3g} samples/s)"
    )


@pytest.mark.parametrize(
    "command",
    [["jobs"], ["show", "{native}"], ["compare", "{native}", "{lean}"], ["hosts"], ["token", "list"]],
    ids=["jobs", "show", "compare", "hosts", "token-list"],
)
def test_read_commands_print_json_that_parses(
    command: list[str], env: dict[str, str], tiny_jobs: TinyJobs, live_platform: Platform
) -> None:
    args = [a.format(native=tiny_jobs.native_id, lean=tiny_jobs.lean_id) for a in command]
    data = json.loads(ok(run_cli(env, *args, "--json")))
    if command[0] == "jobs":
        assert {tiny_jobs.native_id, tiny_jobs.lean_id} <= {job["id"] for job in data}
    elif command[0] == "show":
        assert (data["id"], data["status"], data["spec"]["executor"]["name"]) == (
            tiny_jobs.native_id,
            "succeeded",
            "native",
        )
    elif command[0] == "compare":
        rows = data["jobs"]
        assert [row["executor"] for row in rows] == ["native", "lean_retain"] and rows[0]["speedup"] == 1.0
    elif command[0] == "hosts":
        assert [h["name"] for h in data] == [live_platform.host_name] and len(data[0]["devices"]) == 3
    else:
        assert any(t["name"] == "SFUMATO_ADMIN_TOKEN" for t in data) and all(t.get("token") is None for t in data)


def test_logs_json_prints_one_object_per_line_and_follow_stops_at_the_end(
    env: dict[str, str], tiny_jobs: TinyJobs
) -> None:
    lines = [
        json.loads(line) for line in ok(run_cli(env, "logs", str(tiny_jobs.native_id), "-f", "--json")).splitlines()
    ]
    assert lines and all({"id", "attempt", "stream", "text"} <= set(line) for line in lines)
    plain = ok(run_cli(env, "logs", str(tiny_jobs.native_id))).splitlines()
    assert plain == [line["text"] for line in lines]


def test_compare_prints_executor_throughput_speedup_memory_and_reward(env: dict[str, str], tiny_jobs: TinyJobs) -> None:
    table = ok(run_cli(env, "compare", str(tiny_jobs.native_id), str(tiny_jobs.lean_id)))
    for header in ("EXECUTOR", "SAMPLES/S", "SPEEDUP", "PEAK MEMORY", "FINAL REWARD"):
        assert header in table
    rows = {line.split("│")[3].strip(): line for line in table.splitlines() if "│" in line and "succeeded" in line}
    assert set(rows) == {"native", "lean_retain"}
    assert "1.00\u00d7" in rows["native"] and "MiB" in rows["lean_retain"]


def test_export_writes_a_row_per_step_as_csv_and_parquet(
    env: dict[str, str], tiny_jobs: TinyJobs, tmp_path: Path
) -> None:
    job = str(tiny_jobs.native_id)
    ok(run_cli(env, "export", job, "--format", "csv", "-o", str(tmp_path / "m.csv")))
    rows = list(csv.DictReader((tmp_path / "m.csv").open()))
    assert [int(r["step"]) for r in rows] == list(range(1, STEPS + 1))
    assert {"reward/mean", "loss", "throughput/samples_per_s", "memory/peak_bytes"} <= set(rows[0])
    reward = Client(env["SFUMATO_URL"], env["SFUMATO_TOKEN"]).metrics(tiny_jobs.native_id, ["reward/mean"])
    assert [float(r["reward/mean"]) for r in rows] == reward["reward/mean"].values

    to_stdout = ok(run_cli(env, "export", job, "--keys", "reward/mean,loss", "-o", "-"))
    assert next(csv.reader(io.StringIO(to_stdout))) == ["step", "loss", "reward/mean"]

    result = run_cli(env, "export", job, "--format", "parquet", "-o", str(tmp_path / "m.parquet"))
    assert f"wrote {STEPS} steps" in result.stderr
    table = pq.read_table(tmp_path / "m.parquet")
    assert table.column("step").to_pylist() == list(range(1, STEPS + 1))
    assert table.column("reward/mean").to_pylist() == reward["reward/mean"].values


def test_login_saves_url_and_token_owner_only_and_later_commands_use_them(
    live_platform: Platform, tmp_path: Path, tiny_jobs: TinyJobs
) -> None:
    env = cli_env(live_platform, tmp_path)
    del env["SFUMATO_URL"], env["SFUMATO_TOKEN"]
    ok(run_cli(env, "login", "--url", live_platform.url, "--token", live_platform.token))
    config = tmp_path / ".config" / "sfumato" / "config.toml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert json.loads(ok(run_cli(env, "show", str(tiny_jobs.native_id), "--json")))["id"] == tiny_jobs.native_id


def test_a_token_is_created_shown_once_listed_and_revoked(env: dict[str, str]) -> None:
    secret = ok(run_cli(env, "token", "create", "ci-nightly", "--scope", "read", "--expires-days", "7")).strip()
    assert secret.startswith("sfu_")
    listed = json.loads(ok(run_cli(env, "token", "list", "--json")))
    created = next(t for t in listed if t["name"] == "ci-nightly")
    assert created["scope"] == "read" and created["expires_at"] and created["revoked_at"] is None
    ok(run_cli({**env, "SFUMATO_TOKEN": secret}, "jobs", "--json"))
    assert ok(run_cli(env, "token", "revoke", str(created["id"]))).strip() == f"token {created['id']} revoked"
    refused = run_cli({**env, "SFUMATO_TOKEN": secret}, "jobs")
    assert refused.returncode == 1 and "token revoked" in refused.stderr


def test_cancel_and_retry_print_the_new_state(env: dict[str, str], tiny_jobs: TinyJobs, tmp_path: Path) -> None:
    spec = tmp_path / "long.yaml"
    spec.write_text(tiny_jobs.spec_file.read_text().replace("${TINY_STEPS}", "1000"))
    job = json.loads(ok(run_cli({**env, "TINY_EXECUTOR": "long"}, "submit", str(spec), "--json")))
    assert job["status"] == "queued" and job["name"] == "tiny-long"
    assert re.fullmatch(rf"job {job['id']}: (cancelled|cancel requested)\n", ok(run_cli(env, "cancel", str(job["id"]))))
    with Client(env["SFUMATO_URL"], env["SFUMATO_TOKEN"]) as client:
        client.wait(job["id"], timeout=60, interval=0.5)
    assert ok(run_cli(env, "retry", str(job["id"]))) == f"job {job['id']}: queued again\n"
    ok(run_cli(env, "cancel", str(job["id"])))


BAD_SPEC = "algorithm: {group_size: 8\nname: broken\n"


@pytest.mark.parametrize(
    ("case", "message"),
    [
        ("unreachable-server", r"^error: cannot reach the Sfumato server at http://127\.0\.0\.1:\d+: .+$"),
        (
            "wrong-token",
            r"^error: authentication failed: invalid token \(check SFUMATO_TOKEN or run `sfumato login`\)$",
        ),
        ("no-token", r"^error: no API token: pass token=, set SFUMATO_TOKEN, or run `sfumato login`$"),
        ("unknown-job", r"^error: job 999999 not found$"),
        ("bad-yaml", r"^error: .*bad\.yaml, line 2: invalid YAML: .+$"),
        ("missing-file", r"^error: cannot read .*nope\.yaml: No such file or directory$"),
        ("unset-variable", r"^error: .*tiny\.yaml, line 8: environment variable TINY_STEPS is not set .*$"),
        ("bad-set-path", r"^error: --set algorithm\.grup_size: algorithm has no field 'grup_size'; fields: .+$"),
        ("refused-spec", r"^error: algorithm\.group_size: .+$"),
        ("finished-job-cancel", r"^error: .*(finished|succeeded).*$"),
    ],
)
def test_bad_input_prints_one_line_on_stderr_and_exits_non_zero(
    case: str, message: str, env: dict[str, str], tiny_jobs: TinyJobs, tmp_path: Path
) -> None:
    spec = str(tiny_jobs.spec_file)
    (tmp_path / "bad.yaml").write_text(BAD_SPEC)
    with_steps = {**env, "TINY_STEPS": "1"}
    argv, run_env = {
        "unreachable-server": (["--url", f"http://127.0.0.1:{free_port()}", "jobs"], env),
        "wrong-token": (["--token", "sfu_wrong", "jobs"], env),
        "no-token": (["jobs"], {k: v for k, v in env.items() if k != "SFUMATO_TOKEN"}),
        "unknown-job": (["show", "999999"], env),
        "bad-yaml": (["submit", str(tmp_path / "bad.yaml")], env),
        "missing-file": (["submit", str(tmp_path / "nope.yaml")], env),
        "unset-variable": (["submit", spec], env),
        "bad-set-path": (["submit", spec, "--set", "algorithm.grup_size=8"], with_steps),
        "refused-spec": (["submit", spec, "--set", "algorithm.group_size=1"], with_steps),
        "finished-job-cancel": (["cancel", str(tiny_jobs.native_id)], env),
    }[case]
    result = run_cli(run_env, *argv)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""
    assert re.fullmatch(message, result.stderr.rstrip("\n")), result.stderr


def test_client_commands_run_without_the_server_dependencies(env: dict[str, str], tiny_jobs: TinyJobs) -> None:
    code = f"import runpy\nsys.argv = ['sfumato', 'show', '{tiny_jobs.native_id}', '--json']\n"
    code += "runpy.run_module('sfumato.cli', run_name='__main__')"
    result = subprocess.run(
        [sys.executable, "-c", without_server_dependencies(code)], env=env, cwd=REPO, capture_output=True, text=True
    )
    assert json.loads(ok(result))["status"] == "succeeded"
