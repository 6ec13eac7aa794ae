"""The ``vlm_judge`` reward's options: a vision-language model behind an OpenAI-compatible chat endpoint (vLLM,
SGLang) asked a rubric about each image, its answer read by a named parser (docs/rewards.md)."""

from __future__ import annotations

import string
from typing import Literal

VLM_JUDGE = "vlm_judge"
JUDGE_OPTIONS = ("judge_model", "rubric", "parser", "score_field")
JudgeParser = Literal["number_0_10", "yes_no", "json_field"]
DEFAULT_RUBRIC = (
    'How well does this image match the prompt "{prompt}"? Rate it from 0 (not at all) to 10 (perfectly). '
    "Answer with the number only."
)
DEFAULT_PARSER: JudgeParser = "number_0_10"
RUBRIC_PLACEHOLDER = "prompt"


def check_rubric(rubric: str) -> str:
    """A template whose only placeholder is ``{prompt}`` (literal braces written ``{{`` and ``}}``)."""
    try:
        names = {name for _, name, _, _ in string.Formatter().parse(rubric) if name is not None}
    except ValueError as exc:
        raise ValueError(f"not a template: {exc}; write literal braces as {{{{ and }}}}") from None
    others = names - {RUBRIC_PLACEHOLDER}
    if others:
        named = ", ".join(repr(name) for name in sorted(others))
        raise ValueError(f"only {{prompt}} may stand in the rubric, not {named}")
    return rubric
