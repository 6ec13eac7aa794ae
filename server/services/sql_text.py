"""Hot statements written once as SQL, with every result column named and typed in order.

A `text()` statement costs a request almost nothing to build or look up in the compiled cache, unlike an
ORM or Core statement built per call. Naming every column in order, as here, is what lets SQLAlchemy
keep the result's column map with the compiled statement instead of matching names on each execution;
the types turn SQLite's strings into datetimes and its integers into booleans, as on PostgreSQL.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Result, Table, TextualSelect, column, text
from sqlalchemy.types import TypeEngine


def select_text(sql: str, **columns: TypeEngine[Any] | type[TypeEngine[Any]]) -> TextualSelect:
    """`sql` returning exactly `columns`, in that order, each with its type; rows are keyed by the names the
    SQL gives its columns, so alias them as named here."""
    return text(sql).columns(*(column(name, type_) for name, type_ in columns.items()))


def column_types(table: Table, *names: str) -> dict[str, TypeEngine[Any]]:
    """The types of `names` in `table`, in that order, for select_text."""
    return {name: table.c[name].type for name in names}


def rows_as_dicts(result: Result[Any]) -> list[dict[str, Any]]:
    """Rows as plain dicts, which pydantic reads many times faster than row mappings."""
    keys = list(result.keys())
    return [dict(zip(keys, row, strict=True)) for row in result]
