"""The spec fields whose values differ across jobs: what the compare answer lists beside the figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Fields that differ by design between runs of one experiment.
IGNORED_FIELDS = ("name",)
# The table's one convention for a cell without a plain value, said once (the compare answer's definitions).
MISSING = "—"
NULL = "null"
EMPTY = "(empty)"
DEFINITION = (
    f"each job's value as its spec stores it; {MISSING} where the job's spec has no such field (an option of "
    f"another executor), {NULL} where the field is there but unset (its default applies), {EMPTY} for empty "
    "text or an empty list"
)


def flatten(spec: Mapping[str, Any], prefix: str = "", null: str = "") -> dict[str, str]:
    """{"algorithm": {"group_size": 4}} → {"algorithm.group_size": "4"}; lists of prompts become lines; an
    unset (None) value becomes `null` (empty for a form's fields)."""
    flat: dict[str, str] = {}
    for key, value in spec.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}.", null))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                flat.update(flatten(item, f"{name}.{i}.", null))
        elif isinstance(value, list | tuple):
            sep = ", " if all(isinstance(v, int | float) for v in value) else "\n"
            flat[name] = sep.join(str(v) for v in value)
        elif isinstance(value, bool):
            flat[name] = "true" if value else "false"
        else:
            flat[name] = null if value is None else str(value)
    return flat


def spec_differences(specs: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """(dotted field, value per spec) for every field whose values are not all the same, by field name; cells
    without a plain value read as DEFINITION says."""
    flat = [{name: value or EMPTY for name, value in flatten(spec, null=NULL).items()} for spec in specs]
    names = sorted({name for f in flat for name in f} - set(IGNORED_FIELDS))
    rows = []
    for name in names:
        values = [f.get(name, MISSING) for f in flat]
        if len(set(values)) > 1:
            rows.append((name, values))
    return rows
