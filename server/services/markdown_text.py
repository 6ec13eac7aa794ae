"""Markdown a user wrote (experiment notes) as HTML that is safe to put in a page: the one renderer the
experiment page and the exported report use.

markdown-it-py in CommonMark mode with raw HTML off: `<script>` and every other tag a note contains is
shown as text, and links whose scheme is not safe (javascript:, vbscript:, file:, data: except images) are
not made links (markdown-it's validateLink). Tables and strikethrough are on (GitHub's habits).
"""

from __future__ import annotations

from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)


def markdown_html(text: str) -> str:
    """The note as HTML (block elements; raw HTML escaped)."""
    return _RENDERER.render(text)
