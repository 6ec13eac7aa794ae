"""The harness's process discovery sees only what the test started: on a machine where another platform runs
processes with the same command line, a test never finds, waits for or kills them."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import psutil
from platform_harness import own_processes, still_alive_after

# Holds until its stdin closes: a process that lives exactly as long as the test wants.
HOLD = "import sys; sys.stdin.read()"
# Starts a holding child whose command line ends with `discovery-<its own first argument>`.
SPAWN = f"import subprocess, sys; subprocess.run([sys.executable, '-c', {HOLD!r}, 'discovery-' + sys.argv[1]])"


def test_discovery_finds_a_marked_descendant_and_never_the_same_command_outside_the_tree() -> None:
    run = uuid.uuid4().hex
    marker = f"discovery-{run}"
    ours = subprocess.Popen([sys.executable, "-c", SPAWN, run], stdin=subprocess.PIPE)
    elsewhere = subprocess.Popen([sys.executable, "-c", HOLD, marker], stdin=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (found := own_processes([ours.pid], marker)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert marker in psutil.Process(elsewhere.pid).cmdline(), "the look-alike outside the tree runs"
        [child] = found
        assert child.ppid() == ours.pid
    finally:
        for proc in (ours, elsewhere):
            assert proc.stdin is not None
            proc.stdin.close()
            proc.wait(timeout=30)
    assert still_alive_after([child], timeout=30) == []
