"""Prompt sources: the built-in colour × object set, the shapes model's captions (its training split, and the split
held out from training for evaluations), a text file with one prompt per line, or an edit set (its rows
``EditPrompt``s, each instruction with its conditioning image)."""

from __future__ import annotations

from pathlib import Path

from trainer.edit_prompt import EditPrompt
from trainer.prompt_metadata import geneval_prompts
from trainer.spec.dataset_format import format_of_file
from trainer.spec.dataset_source import is_dataset_source
from trainer.spec.edit_set import edit_set_file, edit_set_rows

COLORS: dict[str, tuple[float, float, float]] = {
    "red": (0.9, 0.1, 0.1),
    "green": (0.1, 0.7, 0.1),
    "blue": (0.1, 0.2, 0.9),
    "yellow": (0.95, 0.9, 0.1),
    "orange": (1.0, 0.55, 0.0),
    "purple": (0.5, 0.1, 0.6),
    "pink": (1.0, 0.6, 0.75),
    "white": (1.0, 1.0, 1.0),
    "black": (0.0, 0.0, 0.0),
    "brown": (0.45, 0.25, 0.1),
}
OBJECTS = ("apple", "car", "ball", "house", "flower", "bird", "cup", "chair")


def builtin_colors() -> list[str]:
    return [f"a {color} {obj}" for color in COLORS for obj in OBJECTS]


def load_prompts(source: str) -> list[str]:
    if is_dataset_source(source):
        raise ValueError(
            f"prompts.source: {source!r} is a platform dataset; a job fetches it into its folder before it starts "
            "(trainer/dataset_fetch.py), so read the spec through with_local_datasets first"
        )
    if source == "builtin:colors":
        return builtin_colors()
    if source in ("builtin:shapes", "builtin:shapes-geneval"):  # the latter's GenEval metadata: the geneval reward's
        from trainer.models.shapes_dataset import training_captions

        return training_captions()
    if source == "builtin:shapes-heldout":
        from trainer.models.shapes_dataset import heldout_captions

        return heldout_captions()
    if source == "builtin:ocr":
        from trainer.ocr_prompts import OCR_PROMPTS

        return list(OCR_PROMPTS)
    edit_file = edit_set_file(source)
    if edit_file is not None:
        return [EditPrompt(prompt, image) for prompt, image in edit_set_rows(edit_file)]
    if format_of_file(source) == "geneval":  # the rows' metadata goes to the geneval reward
        return geneval_prompts(Path(source).expanduser())
    lines = [line.strip() for line in Path(source).expanduser().read_text().splitlines()]
    prompts = [line for line in lines if line]
    if not prompts:
        raise ValueError(f"prompts.source: {source!r} holds no prompts")
    return prompts


def load_eval_prompts(source: str, fixed: list[str]) -> list[str]:
    """The prompts sampled for the eval images: the spec's fixed ``prompts.eval``, or for an edit set (whose rows
    carry their images) as many rows of its test split (``test.jsonl``, else the training rows)."""
    test_file = edit_set_file(source, "test") or edit_set_file(source)
    if test_file is None:
        return list(fixed)
    return [EditPrompt(prompt, image) for prompt, image in edit_set_rows(test_file)[: len(fixed)]]


def named_color(prompt: str) -> str | None:
    """The first built-in colour word in the prompt, if any."""
    for word in prompt.lower().replace(",", " ").split():
        if word in COLORS:
            return word
    return None
