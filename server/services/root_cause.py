"""A failed job's root cause in one line, read first: the exception a traceback ends with, else the error's first
line. The full error (traceback included) stays in `jobs.error`; the job page shows it below.

A model the trainer could not download from the hub (trainer/models/hub_download.py) reads as what happened and
where: "could not download org/name from the hub: no network on host h1", the host being the one named by the
worker's "trainer exited with code N on HOST (node K)" line above that traceback."""

from __future__ import annotations

import re

# trainer/models/hub_download.py's ModelDownloadError: "could not download PATH from the hub (ENDPOINT): WHY; ..."
_DOWNLOAD = re.compile(r"ModelDownloadError: could not download (?P<path>\S+) from the hub \([^)]*\): (?P<why>[^;]+)")
# server/services/job_runs.py's first line of a node's error.
_EXITED = re.compile(r"^trainer exited with code -?\d+ on (?P<host>\S+) \(node \d+\)")


def root_cause(error: str | None) -> str | None:
    """The last exception line of the last traceback in `error` ("OSError: cannot reach the model hub: ..."),
    or, when it holds no traceback, its first non-empty line; a failed hub download as its headline."""
    if not error:
        return None
    lines = error.splitlines()
    found: str | None = None
    host = found_host = None
    in_traceback = False
    for line in lines:
        if exited := _EXITED.match(line):
            host = exited["host"]
        if line.startswith("Traceback (most recent call last):"):
            in_traceback = True
        elif in_traceback and line.strip() and not line[:1].isspace():
            found, found_host, in_traceback = line.strip(), host, False
    if found and (download := _DOWNLOAD.search(found)):
        where = f" on host {found_host}" if found_host else ""
        return f"could not download {download['path']} from the hub: {download['why'].strip()}{where}"
    return found or next((line.strip() for line in lines if line.strip()), None)
