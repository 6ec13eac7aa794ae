"""The spec fields whose values differ across jobs: what the compare answer lists beside the figures."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Fields that differ by design between runs of one experiment.
IGNORED_FIELDS = ("name",)
MISSING = "—"


def flatten(spec: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """{"algorithm": {"group_size": 4}} → {"algorithm.group_size": "4"}; lists of prompts become lines."""
    flat: dict[str, str] = {}
    for key, value in spec.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}."))
        elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
            for i, item in enumerate(value):
                flat.update(flatten(item, f"{name}.{i}."))
        elif isinstance(value, list | tuple):
            sep = ", " if all(isinstance(v, int | float) for v in value) else "\n"
            flat[name] = sep.join(str(v) for v in value)
        elif isinstance(value, bool):
            flat[name] = "true" if value else "false"
        else:
            flat[name] = "" if value is None else str(value)
    return flat


def spec_differences(specs: Sequence[Mapping[str, Any]]) -> list[tuple[str, list[str]]]:
    """(dotted field, value per spec) for every field whose values are not all the same, by field name."""
    flat = [flatten(spec) for spec in specs]
    names = sorted({name for f in flat for name in f} - set(IGNORED_FIELDS))
    rows = []
    for name in names:
        values = [f.get(name, MISSING) for f in flat]
        if len(set(values)) > 1:
            rows.append((name, values))
    return rows
