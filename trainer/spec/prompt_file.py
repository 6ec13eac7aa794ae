"""flow_grpo's text prompt format (one prompt per line, as its `dataset/*/train.txt` and `test.txt`), and the
uploaded prompt file of an evaluation: that format, or JSON Lines with a `prompt` field per row (as its GenEval
`*_metadata.jsonl`). Blank lines are skipped. Torch-free, so the platform refuses a bad file with the line and
column that are wrong."""

from __future__ import annotations

from collections.abc import Iterator

from trainer.spec.base import SpecError
from trainer.spec.eval_task import MAX_PROMPT_CHARS
from trainer.spec.row_location import first_column, json_object, key_column, row_error

PROMPT_FILE_SUFFIXES = (".txt", ".jsonl")


def prompt_lines(text: str, field: str) -> Iterator[tuple[int, int, str]]:
    """Each non-blank line as (line, column of its first character, the prompt stripped of surrounding blanks);
    a SpecError at a control character or past MAX_PROMPT_CHARS."""
    for number, line in enumerate(text.splitlines(), start=1):
        prompt = line.strip()
        if not prompt:
            continue
        column = first_column(line)
        check_prompt(prompt, number, column, field)
        yield number, column, prompt


def check_prompt(prompt: str, line: int, column: int, field: str) -> None:
    """A prompt that starts at ``column`` of ``line``: no control characters, at most MAX_PROMPT_CHARS."""
    for offset, char in enumerate(prompt):
        if (ord(char) < 32 and char != "\t") or ord(char) == 127:
            raise row_error(field, line, column + offset, f"a control character ({ord(char):#04x}) in a prompt")
    if len(prompt) > MAX_PROMPT_CHARS:
        raise row_error(field, line, column + MAX_PROMPT_CHARS, f"a prompt is at most {MAX_PROMPT_CHARS} characters")


def text_prompts(text: str, field: str) -> list[str]:
    """flow_grpo's train.txt/test.txt: the prompts in order; a SpecError naming line and column, or one for a
    file without a prompt."""
    prompts = [prompt for _, _, prompt in prompt_lines(text, field)]
    if not prompts:
        raise SpecError(field, "holds no prompts")
    return prompts


def parse_prompt_file(name: str, text: str, max_prompts: int, field: str = "prompt_file") -> list[str]:
    """The file's prompts in order; a SpecError naming `field` and the line on a bad row or one prompt too many."""
    if not name.endswith(PROMPT_FILE_SUFFIXES):
        raise SpecError(f"{field}.name", f"{name!r}: a prompt file is {' or '.join(PROMPT_FILE_SUFFIXES)}")
    content = f"{field}.content"
    rows = _jsonl_prompts(text, content) if name.endswith(".jsonl") else prompt_lines(text, content)
    prompts: list[str] = []
    for number, column, prompt in rows:
        if len(prompts) == max_prompts:
            raise row_error(content, number, column, f"over the limit of {max_prompts} prompts")
        prompts.append(prompt)
    if not prompts:
        raise SpecError(content, f"{name!r} holds no prompts")
    return prompts


def _jsonl_prompts(text: str, field: str) -> Iterator[tuple[int, int, str]]:
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        prompt = json_object(line, number, field).get("prompt")
        column = key_column(line, "prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise row_error(field, number, column, "a JSON object with a non-empty string 'prompt'")
        check_prompt(prompt.strip(), number, column, field)
        yield number, column, prompt.strip()
