"""argon2 runs in a small pool of its own, so a flood of logins cannot take the API's threads.

A password check costs tens of milliseconds of CPU and memory. Requests that need one hand it to this pool
of HASHING_THREADS threads; at most HASHING_WAITING more may wait for it, and any further login is refused
at once (503, HashingBusy) instead of occupying a request thread (and an admission slot) while it waits.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from server.services.errors import ServiceError

T = TypeVar("T")

HASHING_THREADS = max(1, (os.cpu_count() or 2) // 2)
HASHING_WAITING = 2 * HASHING_THREADS
# Taken without waiting by each request that hashes: running plus waiting, never more.
SLOTS = threading.BoundedSemaphore(HASHING_THREADS + HASHING_WAITING)
_pool = ThreadPoolExecutor(max_workers=HASHING_THREADS, thread_name_prefix="argon2")


def _renew_after_fork() -> None:
    """A forked child has none of its parent's threads: a pool that had started them would take work and never
    run it, so the child gets a pool (and slots) of its own."""
    global SLOTS, _pool
    SLOTS = threading.BoundedSemaphore(HASHING_THREADS + HASHING_WAITING)
    _pool = ThreadPoolExecutor(max_workers=HASHING_THREADS, thread_name_prefix="argon2")


os.register_at_fork(after_in_child=_renew_after_fork)


class HashingBusy(ServiceError):
    status_code = 503
    retry_after = 5


def in_hashing_pool(work: Callable[[], T]) -> T:
    """`work()` on the hashing pool; HashingBusy when it is full."""
    if not SLOTS.acquire(blocking=False):
        raise HashingBusy("the server is busy checking passwords; try again in a few seconds")
    try:
        return _pool.submit(work).result()
    finally:
        SLOTS.release()
