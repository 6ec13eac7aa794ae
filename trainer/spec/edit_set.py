"""An edit set as ``prompts.source``: the prompt set of the families that take a conditioning image.

A JSON Lines file of rows ``{"prompt": <instruction>, "image": <image path relative to the file's folder>}``, or a
folder holding ``train.jsonl`` (the training rows) and optionally ``test.jsonl`` (the rows sampled for the eval
images). Torch-free: the spec tells an edit set from a text prompt file before anything loads.
"""

from __future__ import annotations

from pathlib import Path

from trainer.spec.base import SpecError
from trainer.spec.dataset_format import format_of_file, split_file
from trainer.spec.dataset_source import DATASET_PREFIX
from trainer.spec.edit_rows import edit_rows
from trainer.spec.model import IMAGE_FAMILIES


def edit_set_file(source: str, split: str = "train") -> Path | None:
    """The jsonl of ``split`` when ``source`` is an edit set (a folder: its ``train.jsonl`` or ``test.jsonl`` if
    present; a .jsonl file that is not GenEval metadata: that file, for either split), else None."""
    path = Path(source).expanduser()
    if path.is_dir():
        found = path / split_file("edit", split)
        return found if found.is_file() else None
    return path if path.is_file() and format_of_file(path.name) == "edit" else None


def is_edit_set(source: str) -> bool:
    return edit_set_file(source) is not None


def edit_set_rows(path: Path) -> list[tuple[str, Path]]:
    """(instruction, image path) per row of an edit set's jsonl, the image's path made absolute against the file's
    folder; a malformed row is refused naming ``prompts.source``, the line and the column."""
    return [(row.prompt, path.parent / row.image) for row in edit_rows(path.read_text(), "prompts.source")]


def source_problem(family: str, source: str) -> str | None:
    """Why ``source`` cannot be the prompt set of ``family``: an image family's must be an edit set, a text-only
    family's must not. None where it fits, or where this host cannot read the source (a platform dataset, resolved
    at submit; a stored spec's path)."""
    if source.startswith(DATASET_PREFIX) or not (source.startswith("builtin:") or Path(source).expanduser().exists()):
        return None
    edit = not source.startswith("builtin:") and is_edit_set(source)
    if family in IMAGE_FAMILIES and not edit:
        families = ", ".join(sorted(IMAGE_FAMILIES))
        return (
            f"family {family!r} takes a conditioning image per prompt: prompts.source must be an edit set (a .jsonl "
            f"of {{'prompt', 'image'}} rows, or a folder with train.jsonl); image families: {families}"
        )
    if family not in IMAGE_FAMILIES and edit:
        families = ", ".join(sorted(IMAGE_FAMILIES))
        return f"{source!r} is an edit set, whose images condition {families}; family {family!r} takes text prompts"
    return rows_problem(source) if edit else None


def rows_problem(source: str) -> str | None:
    """The first malformed row (its line and column) or row whose image is not a file, of either split of an edit
    set, or None."""
    for path in sorted({p for p in (edit_set_file(source), edit_set_file(source, "test")) if p is not None}):
        try:
            rows = edit_set_rows(path)
        except SpecError as error:
            return f"{path.name} {error.message}"
        for number, (_, image) in enumerate(rows, start=1):
            if not image.is_file():
                return f"{path.name} row {number}: image {image.relative_to(path.parent).as_posix()!r} is not a file"
    return None


def text_prompts_problem(family: str, task: str) -> str | None:
    """Why a ``task`` that samples text prompts alone (an evaluation, the playground) cannot run a ``family`` model,
    or None: an image family edits each edit-set row's image."""
    if family not in IMAGE_FAMILIES:
        return None
    return f"a {family} model edits each edit-set row's image; {task} has text prompts only"
