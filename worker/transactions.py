"""The worker's writes that must reach the database: one unit of work (`server.db.session_scope`), retried
while the database is away."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TypeVar

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.orm import Session

from server.db import session_scope

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_RETRY_DELAY_SECONDS = 5.0


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
            with session_scope() as session:
                return write(session)
        except SQLAlchemyError as exc:
            waited = time.monotonic() - started
            if stop.is_set() or (give_up_after_seconds is not None and waited > give_up_after_seconds):
                raise
            log.warning("%s: database unavailable (%s); retrying in %.1f s", what, exc.__class__.__name__, delay)
        stop.wait(delay)
        delay = min(delay * 2, MAX_RETRY_DELAY_SECONDS)
