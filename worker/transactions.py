"""The worker's unit of work: one transaction that takes SQLite's write lock up front, retried while
the database is away."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from server.db import get_sessionmaker
from server.services.scheduler import writer_transaction

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_RETRY_DELAY_SECONDS = 5.0


@contextmanager
def writer_session() -> Iterator[Session]:
    """Commit on success, roll back on error; on SQLite a `BEGIN IMMEDIATE` transaction, so a
    read-then-write never fails with a stale snapshot while the scheduler and server write too."""
    with writer_transaction(get_sessionmaker()) as session:
        yield session


def write_when_database_answers(
    write: Callable[[Session], T], what: str, *, give_up_after_seconds: float | None, stop: threading.Event
) -> T:
    """Run `write` in one transaction, retrying while the database is unreachable.

    A job's start and its end must reach the database: a lost end would leave the job running
    forever. `give_up_after_seconds` None retries until the worker shuts down.
    """
    started = time.monotonic()
    delay = 0.5
    while True:
        try:
            with writer_session() as session:
                return write(session)
        except SQLAlchemyError as exc:
            waited = time.monotonic() - started
            if stop.is_set() or (give_up_after_seconds is not None and waited > give_up_after_seconds):
                raise
            log.warning("%s: database unavailable (%s); retrying in %.1f s", what, exc.__class__.__name__, delay)
        stop.wait(delay)
        delay = min(delay * 2, MAX_RETRY_DELAY_SECONDS)
