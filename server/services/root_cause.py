"""A failed job's root cause in one line, read first: the exception a traceback ends with, else the error's first
line. The full error (traceback included) stays in `jobs.error`; the job page shows it below."""

from __future__ import annotations


def root_cause(error: str | None) -> str | None:
    """The last exception line of the last traceback in `error` ("OSError: cannot reach the model hub: ..."),
    or, when it holds no traceback, its first non-empty line."""
    if not error:
        return None
    lines = error.splitlines()
    found: str | None = None
    in_traceback = False
    for line in lines:
        if line.startswith("Traceback (most recent call last):"):
            in_traceback = True
        elif in_traceback and line.strip() and not line[:1].isspace():
            found, in_traceback = line.strip(), False
    return found or next((line.strip() for line in lines if line.strip()), None)
