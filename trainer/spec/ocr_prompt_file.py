"""flow_grpo's OCR prompt format (its dataset/ocr/train.txt and test.txt): one prompt per line, the text to render
between the first two double quotes. The ``ocr`` reward scores that quoted text, so a line without one could never
be rewarded and is refused where it stands."""

from __future__ import annotations

from trainer.spec.base import SpecError
from trainer.spec.prompt_file import prompt_lines
from trainer.spec.row_location import row_error


def quoted_target(prompt: str) -> str | None:
    """The text between the prompt's first two double quotes, as flow_grpo reads it; None without a pair."""
    parts = prompt.split('"')
    return parts[1] if len(parts) >= 3 else None


def ocr_prompts(text: str, field: str) -> list[str]:
    """The prompts in order, each quoting a non-blank target; a SpecError naming the line and the column of the
    missing or empty quote."""
    prompts: list[str] = []
    for number, column, prompt in prompt_lines(text, field):
        opening = prompt.find('"')
        if opening < 0:
            raise row_error(field, number, column + len(prompt), 'no text in double quotes ("...") to render')
        if prompt.find('"', opening + 1) < 0:
            raise row_error(field, number, column + opening, "a double quote without its closing one")
        if not (quoted_target(prompt) or "").strip():
            raise row_error(field, number, column + opening, "the quoted text to render is empty")
        prompts.append(prompt)
    if not prompts:
        raise SpecError(field, "holds no prompts")
    return prompts
