"""First start of `sfumato up`: the admin token and then the admin's one-time password setup link are printed
last, set apart, after the worker's banner."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from platform_harness import prepare

pytestmark = pytest.mark.slow


def test_the_admin_token_is_printed_last_after_the_worker_s_banner(tmp_path: Path, tiny_model: Path) -> None:
    platform = prepare(tmp_path, "", "", tiny_model)
    del platform.env["SFUMATO_ADMIN_TOKEN"]  # a real first start: no token given, one is made
    log = platform.logs / "up.log"
    try:
        platform.start("up", [sys.executable, "-m", "sfumato.cli", "up", "--port", str(platform.port)])
        platform.wait_for("the setup link", lambda: "/setup-password?code=" in log.read_text(errors="replace"))
    finally:
        platform.stop()
    text = log.read_text(errors="replace")
    banner = text.index("[tasks]")  # celery's worker banner
    up = text.index(f"Sfumato is up at http://127.0.0.1:{platform.port}")
    token = text.index("admin API token (shown once): sfu_")
    assert banner < up < token
    block = text[token:].split("\n")
    assert (
        block[1]
        == f"log in at http://127.0.0.1:{platform.port}/login with it, or: sfumato login --url http://127.0.0.1:{platform.port}"
    )
    assert set(block[2]) == {"─"}
    link = text.index(f"http://127.0.0.1:{platform.port}/setup-password?code=")
    assert token < link
