"""Counting the SQL statements an action sends: a bound on them is a deterministic spec of how an action reads,
where a timing would depend on the machine's load."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import Engine


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """Every statement `engine` sends to the database inside the block (a batch of an executemany counts once)."""
    sent: list[str] = []

    def record(conn: Any, cursor: Any, statement: str, parameters: Any, context: Any, executemany: bool) -> None:
        sent.append(" ".join(statement.split())[:160])

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)
