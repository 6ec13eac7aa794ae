"""The worker's unit of work: one transaction that takes SQLite's write lock up front."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy.orm import Session

from server.db import get_sessionmaker
from server.services.scheduler import writer_transaction


@contextmanager
def writer_session() -> Iterator[Session]:
    """Commit on success, roll back on error; on SQLite a `BEGIN IMMEDIATE` transaction, so a
    read-then-write never fails with a stale snapshot while the scheduler and server write too."""
    with writer_transaction(get_sessionmaker()) as session:
        yield session
