"""`sfumato up` says it is up only once the API answers: at the moment its banner line appears, GET
/api/v1/health answers 200. The platform here has its admin token and password already, as at a restart, when
there is no token or setup link to print."""

from __future__ import annotations

import queue
import secrets
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

import httpx
import pytest
from platform_harness import REPO, prepare

from sfumato.cli.process_groups import stop_processes

pytestmark = pytest.mark.slow  # the whole embedded platform in real processes

BANNER = "Sfumato is up at "


def read_lines(stream: IO[bytes], lines: queue.Queue[str | None]) -> None:
    for raw in iter(stream.readline, b""):
        lines.put(raw.decode(errors="replace"))
    lines.put(None)


def health_status(url: str) -> int | None:
    try:
        return httpx.get(f"{url}/api/v1/health", timeout=5).status_code
    except httpx.HTTPError:
        return None


def test_the_banner_appears_only_once_the_api_answers(tmp_path: Path) -> None:
    platform = prepare(tmp_path, "", "", None)
    env = {**platform.env, "SFUMATO_ADMIN_PASSWORD": secrets.token_urlsafe(18)}
    argv = [sys.executable, "-m", "sfumato.cli", "up", "--port", str(platform.port)]
    up = subprocess.Popen(
        argv, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    assert up.stdout is not None
    lines: queue.Queue[str | None] = queue.Queue()
    reader = threading.Thread(target=read_lines, args=(up.stdout, lines), daemon=True)
    reader.start()
    seen: list[str] = []
    try:
        while (line := lines.get(timeout=180)) is not None and BANNER not in line:
            seen.append(line)
        status_at_banner = health_status(platform.url) if line is not None else None
    finally:
        stop_processes([up], grace_seconds=30)
        reader.join(timeout=30)  # the pipe ends with the process
        up.stdout.close()

    assert line is not None, "up ended without its banner:\n" + "".join(seen[-40:])
    assert status_at_banner == 200
