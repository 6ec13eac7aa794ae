"""An uploaded prompt set for an evaluation: flow_grpo's text format (one prompt per line, as its `dataset/*/
train.txt` and `test.txt`) or JSON Lines with a `prompt` field per row (as its GenEval `*_metadata.jsonl`). Blank
lines are skipped. Torch-free, so the platform refuses a bad file with the line that is wrong."""

from __future__ import annotations

import json

from trainer.spec.base import SpecError
from trainer.spec.eval_task import MAX_PROMPT_CHARS

PROMPT_FILE_SUFFIXES = (".txt", ".jsonl")


def parse_prompt_file(name: str, text: str, max_prompts: int, field: str = "prompt_file") -> list[str]:
    """The file's prompts in order; a SpecError naming `field` and the line on a bad row or one prompt too many."""
    if not name.endswith(PROMPT_FILE_SUFFIXES):
        raise SpecError(f"{field}.name", f"{name!r}: a prompt file is {' or '.join(PROMPT_FILE_SUFFIXES)}")
    jsonl = name.endswith(".jsonl")
    prompts: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        prompt = _jsonl_prompt(line, number, field) if jsonl else line.strip()
        if len(prompt) > MAX_PROMPT_CHARS:
            raise SpecError(f"{field}.content", f"line {number}: a prompt is at most {MAX_PROMPT_CHARS} characters")
        if len(prompts) == max_prompts:
            raise SpecError(f"{field}.content", f"line {number}: over the limit of {max_prompts} prompts")
        prompts.append(prompt)
    if not prompts:
        raise SpecError(f"{field}.content", f"{name!r} holds no prompts")
    return prompts


def _jsonl_prompt(line: str, number: int, field: str) -> str:
    try:
        row = json.loads(line)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{field}.content", f"line {number}: not JSON ({exc.msg})") from None
    prompt = row.get("prompt") if isinstance(row, dict) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise SpecError(f"{field}.content", f"line {number}: a JSON object with a non-empty string 'prompt'")
    return prompt.strip()
