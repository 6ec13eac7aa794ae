"""`make run` passes PORT and HOST to `sfumato up`, as the README says."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def planned_up_command(*assignments: str) -> str:
    """The `sfumato up` line `make -n run` would run (nothing is run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    planned = subprocess.run(["make", "-n", "run", *assignments], cwd=ROOT, capture_output=True, text=True, check=True)
    return next(line for line in planned.stdout.splitlines() if "sfumato up" in line)


def test_make_run_serves_on_the_port_and_address_given() -> None:
    assert planned_up_command("PORT=8123", "HOST=0.0.0.0").endswith("sfumato up --host 0.0.0.0 --port 8123")


def test_make_run_without_a_port_serves_on_8000_on_this_machine_only() -> None:
    assert planned_up_command().endswith("sfumato up --host 127.0.0.1 --port 8000")
