"""Values the database can store, found wherever a request brings them in: text without a NUL character and
integers within the signed 64-bit range.

PostgreSQL refuses a NUL in text and in jsonb, BIGINT and orjson refuse an integer beyond 64 bits, and SQLite
raises OverflowError for one. Each reached the database (or the JSON encoder) from a request and answered 500:
an advise spec with an integer above 2**64, an artifact path with a NUL. Checked at the door instead, each is a
422 naming the field, in the `[{"field", "message"}]` shape of every field error.
"""

from __future__ import annotations

from collections import deque
from typing import Any

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
NUL_MESSAGE = "contains a NUL character (\\u0000), which cannot be stored; remove it"
INT_MESSAGE = f"is an integer outside the signed 64-bit range ({INT64_MIN} to {INT64_MAX})"
MAX_REPORTED = 20  # a body of a million bad values answers with the first few


def unstorable_fields(value: Any, field: str = "") -> list[dict[str, str]]:
    """Every string (key or value) holding a NUL and every integer beyond 64 bits in JSON-shaped `value`, named
    by its dotted path under `field` (`spec.algorithm.seed`, `steps.0.values.loss`). Walked with a queue, not
    recursion, so a deeply nested body cannot exhaust the stack."""
    errors: list[dict[str, str]] = []
    pending: deque[tuple[str, Any]] = deque([(field, value)])
    while pending and len(errors) < MAX_REPORTED:
        path, item = pending.popleft()
        if isinstance(item, str):
            if "\x00" in item:
                errors.append({"field": path, "message": NUL_MESSAGE})
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                errors.append({"field": path, "message": INT_MESSAGE})
        elif isinstance(item, dict):
            for key, inner in item.items():
                if "\x00" in str(key):
                    errors.append({"field": path, "message": f"the key {str(key)!r} {NUL_MESSAGE}"})
                else:
                    pending.append((_join(path, str(key)), inner))
        elif isinstance(item, list | tuple):
            pending.extend((_join(path, str(index)), inner) for index, inner in enumerate(item))
    return errors


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part
