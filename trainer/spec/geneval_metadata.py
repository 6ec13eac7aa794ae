"""GenEval's prompt metadata (prompts/evaluation_metadata.jsonl in github.com/djghosh13/geneval; flow_grpo's
dataset/geneval/*_metadata.jsonl): one JSON object a line, ``{"tag", "prompt", "include": [...], "exclude": [...]}``.

An include clause is ``{"class", "count", "color"?, "position"?}``; a position is ``[relation, k]`` with a relation
GenEval's evaluate_images.py knows ("left of", "right of", "above", "below") and ``k`` the index of an earlier
include clause, or Sfumato's ``[place, "grid"]`` (a place of the image's 3×3 grid, as builtin:shapes-geneval
writes). An exclude clause is ``{"class", "count"}``. The ``geneval`` reward checks an image against these rows, so
each is checked here, torch-free, with the line and column of what is wrong."""

from __future__ import annotations

from typing import Any

from trainer.spec.base import SpecError
from trainer.spec.prompt_file import check_prompt
from trainer.spec.row_location import first_column, json_object, key_column, row_error

RELATIONS = ("left of", "right of", "above", "below")
GRID = "grid"
GRID_PLACES = tuple(f"{row} {column}" for row in ("top", "middle", "bottom") for column in ("left", "center", "right"))
ROW_KEYS = ("tag", "prompt", "include", "exclude")
INCLUDE_KEYS = ("class", "count", "color", "position")
EXCLUDE_KEYS = ("class", "count")


def geneval_rows(text: str, field: str) -> list[dict[str, Any]]:
    """The metadata rows in order, as GenEval's evaluation reads them; a SpecError naming the line and column of
    the first malformed row, or one for a file without a row."""
    rows: list[dict[str, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            rows.append(_row(line, number, field))
    if not rows:
        raise SpecError(field, "holds no rows")
    return rows


def _row(line: str, number: int, field: str) -> dict[str, Any]:
    row = json_object(line, number, field)

    def refuse(message: str, *path: str | int) -> SpecError:
        return row_error(field, number, key_column(line, *path) if path else first_column(line), message)

    for key in row:
        if key not in ROW_KEYS:
            raise refuse(f"unknown key {key!r}; a row has {', '.join(ROW_KEYS)}", key)
    prompt = row.get("prompt")
    if not isinstance(prompt, str) or not prompt.strip():
        raise refuse("'prompt' is a non-empty string", "prompt")
    check_prompt(prompt.strip(), number, key_column(line, "prompt"), field)
    if not isinstance(row.get("tag", ""), str):
        raise refuse("'tag' is a string", "tag")
    include = row.get("include")
    if not isinstance(include, list) or not include:
        raise refuse("'include' is a non-empty list of {class, count, color?, position?}", "include")
    exclude = row.get("exclude", [])
    if not isinstance(exclude, list):
        raise refuse("'exclude' is a list of {class, count}", "exclude")
    for index, clause in enumerate(include):
        _clause(clause, "include", index, INCLUDE_KEYS, refuse)
    for index, clause in enumerate(exclude):
        _clause(clause, "exclude", index, EXCLUDE_KEYS, refuse)
    return {"tag": row.get("tag", ""), "prompt": prompt.strip(), "include": include, "exclude": exclude}


def _clause(clause: object, kind: str, index: int, keys: tuple[str, ...], refuse: Any) -> None:
    name = f"{kind}[{index}]"
    if not isinstance(clause, dict):
        raise refuse(f"{name} is an object with {', '.join(keys)}", kind)
    for key in clause:
        if key not in keys:
            raise refuse(f"{name} has an unknown key {key!r}; allowed: {', '.join(keys)}", kind, index, key)
    if not isinstance(clause.get("class"), str) or not clause["class"].strip():
        raise refuse(f"{name}.class is a non-empty string", kind, index, "class")
    count = clause.get("count")
    if not isinstance(count, int) or isinstance(count, bool) or count < 1:
        raise refuse(f"{name}.count is an integer of at least 1", kind, index, "count")
    if "color" in clause and (not isinstance(clause["color"], str) or not clause["color"].strip()):
        raise refuse(f"{name}.color is a non-empty string", kind, index, "color")
    if "position" in clause and not _position_ok(clause["position"], index):
        raise refuse(
            f"{name}.position is [relation, k] with a relation of {', '.join(RELATIONS)} and k an earlier include "
            f"clause's index (0..{index - 1}), or [place, {GRID!r}] with a place of {', '.join(GRID_PLACES)}",
            kind,
            index,
            "position",
        )


def _position_ok(position: object, index: int) -> bool:
    if not isinstance(position, list) or len(position) != 2:
        return False
    relation, target = position
    if target == GRID:
        return relation in GRID_PLACES
    return relation in RELATIONS and isinstance(target, int) and not isinstance(target, bool) and 0 <= target < index
