"""The bytes of an artifact as they are uploaded: a file as it is, a folder as one uncompressed tar stream.

The tar stream is built the same way every time from the same files (names sorted, mtime 0, uid/gid 0, no owner
names, modes 0644/0755), so its SHA-256 depends only on the names and contents, and an upload cut short can be
resumed by building the stream again and skipping the bytes the server already holds. Nothing is held in memory
beyond one chunk: a checkpoint is read from disk as it is sent.
"""

from __future__ import annotations

import tarfile
from collections.abc import Iterator
from pathlib import Path

from trainer.spec.ingest import ArtifactPacking

CHUNK_BYTES = 8 << 20
BLOCK = tarfile.BLOCKSIZE


def packing_of(source: Path) -> ArtifactPacking:
    return "tar" if source.is_dir() else "file"


def artifact_chunks(source: Path, chunk_bytes: int = CHUNK_BYTES) -> Iterator[bytes]:
    """The artifact's bytes in chunks of at most `chunk_bytes`: the file's, or the folder's tar stream."""
    if source.is_dir():
        yield from _tar_chunks(source, chunk_bytes)
    else:
        yield from _file_chunks(source, chunk_bytes)


def _file_chunks(path: Path, chunk_bytes: int) -> Iterator[bytes]:
    with path.open("rb") as file:
        while chunk := file.read(chunk_bytes):
            yield chunk


def _tar_chunks(folder: Path, chunk_bytes: int) -> Iterator[bytes]:
    for path in sorted(folder.rglob("*"), key=lambda p: p.relative_to(folder).as_posix()):
        info = _entry(path, path.relative_to(folder).as_posix())
        yield info.tobuf(tarfile.PAX_FORMAT, "utf-8", "surrogateescape")
        if info.isfile():
            yield from _file_chunks(path, chunk_bytes)
            if info.size % BLOCK:
                yield b"\0" * (BLOCK - info.size % BLOCK)
    yield b"\0" * (2 * BLOCK)  # the end-of-archive marker


def _entry(path: Path, name: str) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.mtime = 0
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    if path.is_dir():
        info.type, info.mode = tarfile.DIRTYPE, 0o755
    else:
        info.type, info.size = tarfile.REGTYPE, path.stat().st_size
        info.mode = 0o755 if path.stat().st_mode & 0o100 else 0o644
    return info
