"""Where job files live on disk, with every path confined to the artifact root.

A job's folder is `<artifact root>/jobs/<job id>`; the worker uses it as the trainer's
--output-dir, so the paths the trainer reports (relative to that folder) resolve there.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path, PurePosixPath

from server.config import Settings
from server.services.errors import FieldErrors, NotFound
from server.services.storable_values import NUL_MESSAGE


def job_folder(settings: Settings, job_id: int) -> Path:
    return settings.resolved_artifact_root() / "jobs" / str(job_id)


def confined(base: Path, relative: str, *, field: str) -> Path:
    """`base / relative`, refused when absolute, when it holds a NUL (no file system path can; resolving one
    raised a 500) or when it resolves (through `..` or links) outside `base`."""
    if "\x00" in relative:
        raise FieldErrors.one(field, NUL_MESSAGE)
    if not relative or PurePosixPath(relative).is_absolute() or Path(relative).is_absolute():
        raise FieldErrors.one(field, f"{relative!r} must be a relative path")
    base = base.resolve()
    target = (base / relative).resolve()
    if not target.is_relative_to(base):
        raise FieldErrors.one(field, f"{relative!r} points outside the job's folder")
    return target


def write_atomically(path: Path, data: bytes) -> None:
    """Readers never see half a file: write beside it, then rename over."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=".upload-")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def stored_file(settings: Settings, relative: str) -> Path:
    """A file recorded relative to the artifact root; 404 when it escapes the root or is gone."""
    root = settings.resolved_artifact_root()
    target = (root / relative).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        raise NotFound("file not found")
    return target
