"""Where a prompt-set row goes wrong: every format's parser names the line and the column (both from 1) of the
first bad character or value, so a team fixes a thousand-row upload without bisecting it."""

from __future__ import annotations

import json
from typing import Any

from trainer.spec.base import SpecError


def row_error(field: str, line: int, column: int, message: str) -> SpecError:
    return SpecError(field, f"line {line}, column {column}: {message}")


def decode_text(data: bytes, field: str) -> str:
    """The bytes as UTF-8 (a leading byte-order mark dropped); a SpecError at the first byte that is not."""
    body = data.removeprefix(b"\xef\xbb\xbf")
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = body[: exc.start]
        line = before.count(b"\n") + 1
        column = len(before[before.rfind(b"\n") + 1 :].decode("utf-8")) + 1
        raise row_error(field, line, column, "not UTF-8 text") from None


def json_object(line: str, number: int, field: str) -> dict[str, Any]:
    """One JSON Lines row, which must be an object; a SpecError at the column where the JSON breaks."""
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise row_error(field, number, exc.colno, f"not JSON ({exc.msg})") from None
    if not isinstance(row, dict):
        raise row_error(field, number, first_column(line), "a row is a JSON object")
    return row


def first_column(line: str) -> int:
    """The column of the line's first non-blank character."""
    return len(line) - len(line.lstrip()) + 1


def key_column(line: str, *path: str | int) -> int:
    """The column of a nested value named by ``path``: a string is the next quoted key, an integer ``i`` the
    ``i``-th object opened after the key before (a list of flat objects, as GenEval's clauses). Searched in the
    text, not parsed: where a step is not found (a missing key), the column of the last step that was."""
    at = -1
    for step in path:
        for _ in range(step + 1 if isinstance(step, int) else 1):
            found = line.find("{" if isinstance(step, int) else json.dumps(step), at + 1)
            if found < 0:
                return at + 1 if at >= 0 else first_column(line)
            at = found
    return at + 1 if at >= 0 else first_column(line)
