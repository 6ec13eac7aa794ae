"""Which prompt sets ``model.text_encoders: free`` can run: it encodes every prompt a job can meet once, at set-up,
keeps the embeddings in host memory, and drops the encoders, so a prompt met later could not be encoded.

A job meets the prompts of ``prompts.source``, its eval prompts, and the empty prompt under CFG. The built-in sets
are small (80 colour prompts; the shapes model's captions). A prompt file over MAX_CACHED_PROMPTS would hold too
much in host memory at SD3's 333 × 4096 fp32 embedding (5.5 MB a prompt: 11 GB at 2048): such a job keeps its
encoders on the CPU ('cpu') and encodes prompts as it meets them.
"""

from __future__ import annotations

from pathlib import Path

MAX_CACHED_PROMPTS = 2048


def file_prompt_count(source: str) -> int | None:
    """Non-empty lines of a prompt file; None for a built-in set or a file that cannot be read here."""
    if source.startswith("builtin:"):
        return None
    try:
        return sum(1 for line in Path(source).expanduser().read_text().splitlines() if line.strip())
    except (OSError, UnicodeDecodeError):
        return None


def uncached_prompts(count: int) -> str | None:
    """Why 'free' cannot run a prompt set of ``count`` prompts, or None."""
    if count <= MAX_CACHED_PROMPTS:
        return None
    return (
        f"'free' encodes every prompt of prompts.source once and drops the encoders, but prompts.source holds "
        f"{count} prompts, over the {MAX_CACHED_PROMPTS} whose embeddings are cached: use 'cpu' (the encoders "
        "kept on the CPU encode prompts as they are met) or 'gpu'"
    )
