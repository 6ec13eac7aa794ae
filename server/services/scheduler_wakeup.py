"""Waking the scheduler when there is something to place, instead of at its next poll.

On PostgreSQL, a job becoming queued or ending (its devices free) sends a NOTIFY inside the same
transaction: delivered when that commits, never for a change rolled back. Between passes the scheduler
LISTENs on a connection of its own and starts the next pass as soon as one arrives, so a job submitted to
an idle worker starts in the time of a pass, not after up to a whole poll interval. The interval stays the
bound: for what sends no notification (a host going quiet), and while the listening connection is lost
(the database restarting), when the scheduler polls and reconnects at the next wait. SQLite has no
notifications: the embedded platform polls.
"""

from __future__ import annotations

import logging
import threading
import time

import psycopg
from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session

log = logging.getLogger(__name__)

CHANNEL = "sfumato_scheduler"


def wake_scheduler(session: Session) -> None:
    """Wake the scheduler when the session's transaction commits (PostgreSQL; nothing on SQLite)."""
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text(f"NOTIFY {CHANNEL}"))


class SchedulerWakeup:
    """The scheduler's wait between passes: until a notification, `stop`, or the poll interval."""

    def __init__(self, database_url: str, stop: threading.Event) -> None:
        url = make_url(database_url)
        self.conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.listens = url.get_backend_name() == "postgresql"
        self.stop = stop
        self._connection: psycopg.Connection[tuple[object, ...]] | None = None

    def wait(self, seconds: float) -> bool:
        """True when woken by a notification (every one that arrived meanwhile is taken), False otherwise."""
        if not self.listens or self.stop.is_set():
            self.stop.wait(seconds)
            return False
        started = time.monotonic()
        try:
            connection = self._listening()
            woken = any(True for _ in connection.notifies(timeout=seconds, stop_after=1))
            if woken:
                for _ in connection.notifies(timeout=0):
                    pass
            return woken
        except psycopg.Error as exc:
            log.warning("scheduler not listening for wake-ups (%s); polling until the database answers", exc)
            self.close()
            self.stop.wait(max(0.0, seconds - (time.monotonic() - started)))
            return False

    def close(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _listening(self) -> psycopg.Connection[tuple[object, ...]]:
        """The listening connection, opened (and LISTEN sent) when there is none. A pass that began before it
        was listening has already seen what was committed before then."""
        if self._connection is None or self._connection.closed:
            self._connection = psycopg.connect(self.conninfo, autocommit=True, connect_timeout=5)
            self._connection.execute(f"LISTEN {CHANNEL}")
        return self._connection
