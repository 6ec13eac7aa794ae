"""A prompt row of an edit set: the instruction text with the conditioning image it comes with.

It is a ``str`` (the instruction), so the rewards, the reports and the step's prompt draw read it as any prompt;
its ``image`` rides along to the family's ``encode_prompts``, which encodes it into ``Conditioning.image``. The
same instruction may come with several images, so embeddings are cached by ``prompt_key`` (text and image), and
the unconditional branch of classifier-free guidance is ``negative_prompt``: the empty text with the row's image,
as the edit pipelines run their negative prompt on the same image (diffusers' FluxKontextPipeline,
QwenImageEditPipeline).
"""

from __future__ import annotations

from pathlib import Path

from trainer.spec import SpecError


class EditPrompt(str):
    """The instruction (this string's value) and the path of its conditioning image."""

    image: Path

    def __new__(cls, text: str, image: Path) -> EditPrompt:
        row = super().__new__(cls, text)
        row.image = image
        return row

    def __reduce__(self) -> tuple[type[EditPrompt], tuple[str, Path]]:
        return EditPrompt, (str(self), self.image)

    def __repr__(self) -> str:
        return f"EditPrompt({str(self)!r}, {str(self.image)!r})"


def conditioning_image(prompt: str) -> Path | None:
    """The row's conditioning image, None for a text-only prompt."""
    return prompt.image if isinstance(prompt, EditPrompt) else None


def required_image(prompt: str, family: str) -> Path:
    """The row's conditioning image, for a family that cannot run without one."""
    image = conditioning_image(prompt)
    if image is None:
        message = f"{family} takes a conditioning image per prompt; prompt {str(prompt)!r} came without one"
        raise SpecError("prompts.source", message)
    return image


def prompt_key(prompt: str) -> tuple[str, Path | None]:
    """What a prompt's conditioning is cached under: its text and its image."""
    return str(prompt), conditioning_image(prompt)


def negative_prompt(prompt: str) -> str:
    """The unconditional branch's prompt for this row: the empty text, with the row's image if it has one."""
    image = conditioning_image(prompt)
    return "" if image is None else EditPrompt("", image)
