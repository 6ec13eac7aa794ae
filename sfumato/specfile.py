"""Job specs from YAML or JSON files, with `${ENV}` interpolation and `--set a.b=value` overrides.

Interpolation happens on the file's text, before parsing, the way docker-compose does it:
`${NAME}` (must be set), `${NAME:-default}` (default when unset or empty), `$${` for a literal `${`.
An override's value is parsed as a YAML scalar (`8` → 8, `true` → True, `[1, 2]` → a list) and its
path is checked against the spec's JSON schema, so a typo names the field instead of going unnoticed.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from sfumato.errors import SpecFileError

_VARIABLE = re.compile(r"\$(\$)?\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate(text: str, env: Mapping[str, str], source: str = "spec") -> str:
    """Replace `${NAME}` and `${NAME:-default}` from `env`; `$${...}` stays literal as `${...}`."""

    def replace(match: re.Match[str]) -> str:
        escaped, name, default = match.groups()
        if escaped:
            return match.group(0)[1:]
        value = env.get(name)
        if value:
            return value
        if default is not None:
            return default
        line = text.count("\n", 0, match.start()) + 1
        raise SpecFileError(f"{source}, line {line}: environment variable {name} is not set (use ${{{name}:-default}})")

    return _VARIABLE.sub(replace, text)


def read_spec_file(path: str | Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """A spec file (.yaml, .yml or .json) parsed after interpolation."""
    path = Path(path)
    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise SpecFileError(f"cannot read {path}: {reason}") from exc
    text = interpolate(text, os.environ if env is None else env, str(path))
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise SpecFileError(f"{path}, line {exc.lineno}: invalid JSON: {exc.msg}") from exc
    else:
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f", line {mark.line + 1}" if mark is not None else ""
            problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
            raise SpecFileError(f"{path}{where}: invalid YAML: {problem}") from exc
    if not isinstance(data, dict):
        raise SpecFileError(f"{path}: a spec is a mapping of sections (model, algorithm, ...), not {_kind(data)}")
    return data


def parse_override(assignment: str) -> tuple[list[str], Any]:
    """`algorithm.group_size=8` → (["algorithm", "group_size"], 8)."""
    path, sep, raw = assignment.partition("=")
    parts = path.strip().split(".")
    if not sep or not all(parts):
        raise SpecFileError(f"--set {assignment!r}: expected PATH=VALUE, e.g. algorithm.group_size=8")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as exc:
        raise SpecFileError(f"--set {path}: cannot parse the value {raw!r}") from exc
    return parts, value


def parse_axis(assignment: str) -> tuple[str, list[Any]]:
    """`seed=1,2,3` → ("seed", [1, 2, 3]): an experiment's axis, each value read as YAML like --set's."""
    path, sep, raw = assignment.partition("=")
    path = path.strip()
    if not sep or not path or not all(path.split(".")) or not raw.strip():
        raise SpecFileError(f"--axis {assignment!r}: expected PATH=V1,V2,..., e.g. executor.name=native,jagg")
    values = []
    for part in raw.split(","):
        try:
            values.append(yaml.safe_load(part) if part.strip() else "")
        except yaml.YAMLError as exc:
            raise SpecFileError(f"--axis {path}: cannot parse the value {part!r}") from exc
    return path, values


def apply_overrides(spec: dict[str, Any], assignments: list[str], schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `spec` with each `PATH=VALUE` set; a path the schema does not have is refused."""
    result = copy.deepcopy(spec)
    for assignment in assignments:
        parts, value = parse_override(assignment)
        check_path(schema, parts)
        _set(result, parts, value)
    return result


def check_path(schema: dict[str, Any], parts: list[str]) -> None:
    """Raise SpecFileError unless `parts` names a field (or a list item's field) of the schema."""
    definitions = schema.get("$defs", {})
    node: dict[str, Any] = schema
    for depth, part in enumerate(parts):
        node = _resolve(node, definitions)
        where = ".".join(parts[:depth]) or "the spec"
        if node.get("type") == "array" or "items" in node:
            if not part.isdigit():
                raise SpecFileError(f"--set {'.'.join(parts)}: {where} is a list; use an index, e.g. {where}.0")
            node = node.get("items", {})
            continue
        properties = node.get("properties")
        if properties is None and "oneOf" in node:  # a union by `name` (the executor): any branch's field
            properties = {}
            for branch in node["oneOf"]:
                properties.update(_resolve(branch, definitions).get("properties", {}))
        if properties is None:
            raise SpecFileError(f"--set {'.'.join(parts)}: {where} has no fields")
        if part not in properties:
            known = ", ".join(sorted(properties))
            raise SpecFileError(f"--set {'.'.join(parts)}: {where} has no field {part!r}; fields: {known}")
        node = properties[part]


def _resolve(node: dict[str, Any], definitions: dict[str, Any]) -> dict[str, Any]:
    """Follow `$ref`s, and into the non-null branch of an optional (anyOf with null)."""
    while True:
        if "$ref" in node:
            node = definitions[node["$ref"].rsplit("/", 1)[-1]]
        elif "anyOf" in node:
            branches = [b for b in node["anyOf"] if b.get("type") != "null"]
            if len(branches) != 1:
                return node
            node = branches[0]
        else:
            return node


def _set(spec: dict[str, Any], parts: list[str], value: Any) -> None:
    target: Any = spec
    for depth, part in enumerate(parts[:-1]):
        key: Any = int(part) if isinstance(target, list) else part
        if isinstance(target, dict):
            target = target.setdefault(key, {})
        elif isinstance(target, list) and key < len(target):
            target = target[key]
        else:
            where = ".".join(parts[: depth + 1])
            raise SpecFileError(f"--set {'.'.join(parts)}: {where} is not in the spec file")
        if target is None:
            raise SpecFileError(f"--set {'.'.join(parts)}: {'.'.join(parts[: depth + 1])} is null in the spec file")
    last = parts[-1]
    if isinstance(target, list):
        index = int(last)
        if index >= len(target):
            raise SpecFileError(f"--set {'.'.join(parts)}: the list has {len(target)} item(s)")
        target[index] = value
    elif isinstance(target, dict):
        target[last] = value
    else:
        raise SpecFileError(f"--set {'.'.join(parts)}: {'.'.join(parts[:-1])} is not a mapping in the spec file")


def _kind(data: Any) -> str:
    return "an empty file" if data is None else f"a {type(data).__name__}"
