"""The ``builtin:shapes-geneval`` prompt set: the shapes model's training captions, each with GenEval metadata.

A caption ("a small red circle at the top left on a black background") becomes GenEval's metadata line
(prompts/evaluation_metadata.jsonl in github.com/djghosh13/geneval): one include clause with the shape's class,
count 1, its colour and its place on the 3×3 grid (``"position": ["top left", "grid"]``), and GenEval's counting
exclude (fewer than two of the class). The ``geneval`` reward checks these on the shape detector's objects; it
knows the metadata of every shapes caption, held-out ones included.
"""

from __future__ import annotations

import functools
from typing import Any

from trainer.models.shapes_dataset import COLUMNS, ROWS, all_captions, position_phrase, training_captions

TAG = "shapes"
PLACES = {position_phrase(row, column): (row, column) for row in range(3) for column in range(3)}


def caption_metadata(text: str) -> dict[str, Any]:
    """The metadata line of a caption "a SIZE COLOR SHAPE <place phrase> on a BACKGROUND background"."""
    _, _, color, shape, *rest = text.split()
    row, column = PLACES[" ".join(rest[:-4])]
    place = f"{ROWS[row]} {COLUMNS[column]}"
    return {
        "tag": TAG,
        "prompt": text,
        "include": [{"class": shape, "count": 1, "color": color, "position": [place, "grid"]}],
        "exclude": [{"class": shape, "count": 2}],
    }


@functools.cache
def metadata_by_caption() -> dict[str, dict[str, Any]]:
    """Every shapes caption's metadata line (training and held-out), by the caption."""
    return {text: caption_metadata(text) for text in all_captions()}


def shapes_geneval_metadata() -> list[dict[str, Any]]:
    """The set's lines, in the order of its prompts (the builtin:shapes training captions)."""
    table = metadata_by_caption()
    return [table[text] for text in training_captions()]
