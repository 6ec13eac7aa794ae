"""The GenEval metadata of the prompts this process loaded: what the ``geneval`` reward checks each prompt against.

A prompt set in GenEval's format (a local ``*metadata.jsonl``, read by trainer.prompts.load_prompts) gives the
prompts to the job and each prompt's metadata row to this table; every shapes caption has its own
(trainer/shapes_geneval_prompts.py). A job loads its prompt set before it scores a sample, so the reward, built
from the reward spec alone, finds each prompt's row here. Two sets that give one prompt different rows: the one
loaded last holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from trainer.shapes_geneval_prompts import metadata_by_caption
from trainer.spec.geneval_metadata import geneval_rows

_LOADED: dict[str, dict[str, Any]] = {}


def remember(rows: list[dict[str, Any]]) -> None:
    """Keep the metadata rows of a loaded GenEval prompt set, by prompt."""
    _LOADED.update({row["prompt"]: row for row in rows})


def metadata_of(prompt: str) -> dict[str, Any] | None:
    """The prompt's metadata row: a loaded set's, or the shapes caption's; None when neither knows it."""
    return _LOADED.get(prompt) or metadata_by_caption().get(prompt)


def geneval_prompts(path: Path, field: str = "prompts.source") -> list[str]:
    """The prompts of a local GenEval metadata file, their rows kept for the reward; a malformed row is a SpecError
    naming ``field`` with its line and column."""
    rows = geneval_rows(path.read_text(encoding="utf-8-sig"), field)
    remember(rows)
    return [row["prompt"] for row in rows]
