"""The folder where a server's uvicorn processes keep their Prometheus counters and histograms, so that
`GET /metrics` answers the same totals from whichever process takes the scrape.

prometheus_client's multiprocess mode writes each process's values to files in `PROMETHEUS_MULTIPROC_DIR`
and the scrape sums them. The variable must be set before prometheus_client is imported, in the process
that starts uvicorn, so that every process inherits it; this module imports nothing of prometheus_client.
Each server instance gets a fresh folder of its own (two servers on one machine never add up each other's
requests, a restarted server starts from zero), named after the process that made it. It is removed when
uvicorn returns; the folders of servers that were killed are removed when the next server starts.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

METRICS_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"
FOLDER_PREFIX = "sfumato-server-metrics-"


def process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_dead_servers_folders(parent: Path) -> None:
    """The folders under `parent` left by servers that did not live to remove them (killed)."""
    for folder in parent.glob(f"{FOLDER_PREFIX}*-*"):
        owner = folder.name.removeprefix(FOLDER_PREFIX).split("-", 1)[0]
        if owner.isdigit() and not process_alive(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


@contextmanager
def shared_metrics_dir() -> Iterator[Path]:
    """A new empty folder named in PROMETHEUS_MULTIPROC_DIR for the processes started inside the block."""
    remove_dead_servers_folders(Path(tempfile.gettempdir()))
    folder = Path(tempfile.mkdtemp(prefix=f"{FOLDER_PREFIX}{os.getpid()}-"))
    previous = os.environ.get(METRICS_DIR_ENV)
    os.environ[METRICS_DIR_ENV] = str(folder)
    try:
        yield folder
    finally:
        if previous is None:
            os.environ.pop(METRICS_DIR_ENV, None)
        else:
            os.environ[METRICS_DIR_ENV] = previous
        shutil.rmtree(folder, ignore_errors=True)


def shared_metrics_path() -> Path | None:
    """The folder this process shares its metrics through, or None when it keeps them to itself."""
    folder = os.environ.get(METRICS_DIR_ENV)
    return Path(folder) if folder else None
