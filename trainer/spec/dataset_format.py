"""The formats of a prompt set the platform stores, each through its torch-free row parser, and the file each split
is kept under (flow_grpo's names: dataset/<task>/train.txt, test.txt; GenEval's *_metadata.jsonl)."""

from __future__ import annotations

from typing import Literal, get_args

from trainer.spec.edit_rows import edit_rows
from trainer.spec.geneval_metadata import geneval_rows
from trainer.spec.ocr_prompt_file import ocr_prompts
from trainer.spec.prompt_file import text_prompts

DatasetFormat = Literal["text", "geneval", "ocr", "edit"]
DATASET_FORMATS: tuple[str, ...] = get_args(DatasetFormat)
Split = Literal["train", "test"]
SPLITS: tuple[str, ...] = get_args(Split)

_SUFFIX = {"text": ".txt", "ocr": ".txt", "geneval": "_metadata.jsonl", "edit": ".jsonl"}


def split_file(format: str, split: str) -> str:
    """The file name a split of a set of ``format`` is stored and fetched under: train.txt, test_metadata.jsonl."""
    return f"{split}{_SUFFIX[format]}"


def format_of_file(name: str) -> str:
    """The format a local prompt-set file is read in, by its name: *metadata.jsonl is GenEval's, any other .jsonl
    an edit set, anything else flow_grpo's text (the OCR format is text whose prompts quote their target)."""
    if name.endswith("metadata.jsonl"):
        return "geneval"
    return "edit" if name.endswith(".jsonl") else "text"


def dataset_prompts(format: str, text: str, field: str) -> list[str]:
    """The prompts of a split's text in ``format``; a SpecError naming line and column on a malformed row."""
    if format == "geneval":
        return [row["prompt"] for row in geneval_rows(text, field)]
    if format == "edit":
        return [row.prompt for row in edit_rows(text, field)]
    if format == "ocr":
        return ocr_prompts(text, field)
    return text_prompts(text, field)
