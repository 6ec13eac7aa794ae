"""Where job files live on disk, with every path confined to the artifact root; and the artifact store, where the
bytes of uploaded artifacts are kept (docs/artifacts.md).

A job's folder is `<artifact root>/jobs/<job id>`; the worker uses it as the trainer's
--output-dir, so the paths the trainer reports (relative to that folder) resolve there.

The artifact store is one setting, SFUMATO_ARTIFACT_STORE: unset, a folder under the artifact root
(`<artifact root>/store`); `s3://bucket/prefix`, an S3-compatible bucket (artifact_store_s3.py). An upload in
progress is kept on the server's disk (`<artifact root>/uploads`) until it is complete and checked, then put in
the store whole, so the store never holds half an artifact.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path, PurePosixPath
from typing import Protocol

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


READ_CHUNK_BYTES = 1 << 20


class ArtifactStore(Protocol):
    """Whole objects by key: put once complete, read by byte range, deleted by retention."""

    def put(self, key: str, source: Path) -> None:
        """Store the file `source` (moved or copied) under `key`."""

    def read(self, key: str, start: int, end: int) -> Iterator[bytes]:
        """Bytes `start` to `end` (exclusive) of the object, in chunks."""

    def delete(self, key: str) -> None:
        """Remove the object; a missing one is no error."""


class FolderArtifactStore:
    """Objects as files under one folder: the default, on the artifact root's disk."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def put(self, key: str, source: Path) -> None:
        target = confined(self.root, key, field="key")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.replace(source, target)  # the uploads folder is on the same disk: atomic

    def read(self, key: str, start: int, end: int) -> Iterator[bytes]:
        with confined(self.root, key, field="key").open("rb") as file:
            file.seek(start)
            left = end - start
            while left > 0 and (chunk := file.read(min(left, READ_CHUNK_BYTES))):
                left -= len(chunk)
                yield chunk

    def delete(self, key: str) -> None:
        confined(self.root, key, field="key").unlink(missing_ok=True)


def artifact_store(settings: Settings) -> ArtifactStore:
    """The store SFUMATO_ARTIFACT_STORE names (one client per process and store)."""
    return _store(settings.artifact_store, settings.resolved_artifact_root())


@lru_cache(maxsize=8)
def _store(url: str, artifact_root: Path) -> ArtifactStore:
    if url.startswith("s3://"):
        from server.services.artifact_store_s3 import S3ArtifactStore  # boto3 only where a bucket is used

        return S3ArtifactStore.from_url(url)
    return FolderArtifactStore(artifact_root / "store")


def upload_staging(settings: Settings, artifact_id: int) -> Path:
    """The bytes of artifact `artifact_id` received so far, before the upload is complete."""
    return settings.resolved_artifact_root() / "uploads" / f"{artifact_id}.part"
