"""PostgreSQL rows in binary format, for reads that move a lot of numbers and bytes.

psycopg asks for text results by default: PostgreSQL then prints every float and hex-encodes every bytea
(twice its size), and psycopg parses them back. A binary cursor gets them as stored, which halves the time
of a chart read over thousands of metric blocks. SQLAlchemy has no switch for it, so the statement is
compiled here and run on the session's own connection (its transaction, its snapshot).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Executable
from sqlalchemy.orm import Session


def binary_rows(session: Session, statement: Executable) -> list[tuple[Any, ...]]:
    """All rows of `statement` (PostgreSQL only), fetched in binary format."""
    connection = session.connection()
    compiled = statement.compile(dialect=connection.dialect, compile_kwargs={"render_postcompile": True})
    with connection.connection.driver_connection.cursor(binary=True) as cursor:  # type: ignore[union-attr]
        cursor.execute(compiled.string, compiled.params)
        return cursor.fetchall()
