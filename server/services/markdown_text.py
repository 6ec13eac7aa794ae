"""Markdown a user wrote (experiment notes) as HTML that is safe to put in a page: the one renderer the
experiment page and the exported report use. And the other way round, a user's text quoted in a Markdown
document (the exported report): escaped, so it shows as written and cannot become markup.

markdown-it-py in CommonMark mode with raw HTML off: `<script>` and every other tag a note contains is
shown as text, and links whose scheme is not safe (javascript:, vbscript:, file:, data: except images) are
not made links (markdown-it's validateLink). Tables and strikethrough are on (GitHub's habits).

The Markdown report once carried names and notes as raw HTML, which any viewer that renders HTML in
Markdown ran. Quoted text now has HTML's special characters as entities (no tag, comment or autolink can
start) and Markdown's syntax backslash-escaped (emphasis, code, links and images, tables, strikethrough, and
a line's block markers: headings, lists, quotes, rules), so a viewer shows exactly the characters written.
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt

_RENDERER = MarkdownIt("commonmark", {"html": False, "linkify": False, "typographer": False}).enable(
    ["table", "strikethrough"]
)
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_SPECIAL = re.compile(r"[&<>]")
_INLINE_SYNTAX = re.compile(r"([\\`*_\[\]{}|~!])")  # emphasis, code, links and images, tables, strikethrough
_LIST_ITEM = re.compile(r"^(\d{1,9})([.)])(?=\s|$)")  # "1. " or "1) " opens an ordered list
_BLOCK_MARKER = re.compile(r"^([-+=#])(?=[\s=+#-]|$)")  # "- ", "+ ", "# ", "---", "===": lists, headings, rules


def markdown_html(text: str) -> str:
    """The note as HTML (block elements; raw HTML escaped)."""
    return _RENDERER.render(text)


def markdown_text(text: str) -> str:
    """A user's text (a name, a prompt, a value) as Markdown that shows that text on one line, and only as text:
    line breaks become spaces and leading whitespace (an indented code block) goes."""
    return _escaped_line(text.replace("\r", " ").replace("\n", " "))


def markdown_quote(text: str) -> str:
    """A user's text of several lines (a note) as a Markdown block quote showing it as written, line by line (a
    backslash ends each line that another follows: a hard break): every line stays inside the quote, and none of
    its Markdown or HTML takes effect."""
    lines = [_escaped_line(line) for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n")]
    ends = [bool(line and following) for line, following in zip(lines, [*lines[1:], ""], strict=True)]
    return "\n".join(
        f"> {line}\\" if breaks else f"> {line}".rstrip() for line, breaks in zip(lines, ends, strict=True)
    )


def _escaped_line(line: str) -> str:
    line = _SPECIAL.sub(lambda match: _ENTITIES[match.group()], line.lstrip())
    line = _INLINE_SYNTAX.sub(r"\\\1", line)
    line = _LIST_ITEM.sub(r"\1\\\2", line)
    return _BLOCK_MARKER.sub(r"\\\1", line)
