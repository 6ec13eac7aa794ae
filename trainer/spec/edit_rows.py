"""An edit prompt set: JSON Lines of ``{"prompt": <instruction>, "image": <image file>}``, the image's path relative
to the jsonl's folder (the images travel with the jsonl: uploaded with it, or in the same folder on disk). A path
that leaves that folder (absolute, or through ``..``) is refused, so a set can never read a file outside itself."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import NamedTuple

from trainer.spec.base import SpecError
from trainer.spec.prompt_file import check_prompt
from trainer.spec.row_location import json_object, key_column, row_error

EDIT_KEYS = ("prompt", "image")
IMAGE_SUFFIXES = (".png", ".jpg", ".jpeg", ".webp", ".bmp")


class EditRow(NamedTuple):
    """One edit: the instruction and the conditioning image's path relative to the set's folder."""

    prompt: str
    image: str


def edit_rows(text: str, field: str) -> list[EditRow]:
    """The rows in order; a SpecError naming the line and column of the first malformed row, or one for a file
    without a row."""
    rows: list[EditRow] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        row = json_object(line, number, field)
        for key in row:
            if key not in EDIT_KEYS:
                raise row_error(field, number, key_column(line, key), f"unknown key {key!r}; a row has prompt, image")
        prompt = row.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise row_error(field, number, key_column(line, "prompt"), "'prompt' is a non-empty string")
        check_prompt(prompt.strip(), number, key_column(line, "prompt"), field)
        problem = image_path_problem(row.get("image"))
        if problem:
            raise row_error(field, number, key_column(line, "image"), problem)
        rows.append(EditRow(prompt.strip(), str(row["image"])))
    if not rows:
        raise SpecError(field, "holds no rows")
    return rows


def image_path_problem(path: object) -> str | None:
    """Why ``path`` cannot name an image inside the set's folder, or None."""
    if not isinstance(path, str) or not path.strip():
        return "'image' is the image file's path relative to the jsonl's folder"
    if "\\" in path or path.startswith("/") or PurePosixPath(path).is_absolute() or ":" in path.split("/")[0]:
        return f"'image' {path!r} is absolute; give a path relative to the jsonl's folder, with '/'"
    parts = PurePosixPath(path).parts
    if any(part in ("..", ".") for part in parts) or path.endswith("/"):
        return f"'image' {path!r} leaves or names the set's folder; give a file below it (no '..')"
    if not path.lower().endswith(IMAGE_SUFFIXES):
        return f"'image' {path!r} is not an image file; allowed: {', '.join(IMAGE_SUFFIXES)}"
    return None
