"""The hashing pool works in a process forked after the parent used it (a forked child has none of its threads)."""

from __future__ import annotations

import os
import signal

from server.services.password_pool import in_hashing_pool

CHILD_SECONDS = 20  # the child's own alarm: a pool that never runs its work ends the child, not the test run


def test_a_process_forked_after_the_pool_ran_hashes_in_its_own_pool() -> None:
    assert in_hashing_pool(lambda: 21 * 2) == 42  # the parent's pool has started its threads
    child = os.fork()
    if child == 0:
        signal.alarm(CHILD_SECONDS)
        os._exit(0 if in_hashing_pool(lambda: 21 * 2) == 42 else 1)
    _pid, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
